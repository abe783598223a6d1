import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fixed number of threads that run Swift tasks' jobs: the manager's decoding and processing executors. Work that
/// blocks a thread for milliseconds (decoding, resizing, reading a file) runs here, under
/// `withTaskExecutorPreference`, so it never occupies the cooperative pool and at most `threadCount` such jobs run at
/// once. Inside, `Task.isCancelled` still works, so long work can stop early.
///
/// Threads start on demand, up to `threadCount`, and end when ``shutdown()`` is called (the manager does it when it
/// is released) once the queue is empty.
// @unchecked Sendable: the queue and counters are guarded by `mutex`/`condition`, a pthread mutex and condition
// variable this class owns (allocated in init, destroyed in deinit); TSan sees pthread locks, unlike Synchronization's.
final class WorkerPool: TaskExecutor, @unchecked Sendable {
    let name: String
    let threadCount: Int
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Guarded by `mutex`.
    private var queue: [UnownedJob] = []
    private var head = 0
    private var startedThreads = 0
    private var idleThreads = 0
    private var isShutDown = false

    /// Starts a thread that runs `body`; `false` when the system starts none.
    typealias ThreadStarter = @Sendable (_ body: @escaping @Sendable () -> Void) -> Bool
    private let startsThread: ThreadStarter

    /// Makes a pool of at most `threadCount` threads (at least 1), named `name` for debuggers and `perf`.
    /// `startsThread` starts each (a detached pthread; tests pass one that fails, to see the pool without threads).
    init(name: String, threadCount: Int, startsThread: @escaping ThreadStarter = WorkerPool.startDetachedThread) {
        self.name = name
        self.threadCount = max(1, threadCount)
        self.startsThread = startsThread
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pthread_mutex_lock(mutex)
        queue.append(job)
        var newThread: Int?
        if idleThreads == 0 && startedThreads < threadCount {
            startedThreads += 1
            newThread = startedThreads
        }
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
        if let newThread { startThread(number: newThread) }
    }

    /// Lets the threads end once the jobs already queued have run.
    func shutdown() {
        pthread_mutex_lock(mutex)
        isShutDown = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    private func startThread(number: Int) {
        // The thread holds the pool until shutdown() lets it return.
        let threadName = "\(name)-\(number)"
        if startsThread({ [self] in
            Self.nameThread(threadName)
            run()
        }) {
            return
        }
        // No thread (the system's limit on threads or memory): the pool stays a thread smaller and tries again on a
        // later job. If no thread serves it at all, the queued jobs run here, on the caller's thread, rather than
        // leave their tasks waiting forever.
        pthread_mutex_lock(mutex)
        startedThreads -= 1
        let unserved = startedThreads == 0
        pthread_mutex_unlock(mutex)
        if unserved { runQueuedJobs() }
    }

    /// Starts a detached pthread running `body`.
    static func startDetachedThread(_ body: @escaping @Sendable () -> Void) -> Bool {
        let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let result = pthread_create(
            &thread, &attributes,
            { context in
                Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().body()
                return nil
            }, context)
        pthread_attr_destroy(&attributes)
        if result != 0 { Unmanaged<ThreadBody>.fromOpaque(context).release() }
        return result == 0
    }

    private func runQueuedJobs() {
        let executor = asUnownedTaskExecutor()
        while let job = nextJob(waiting: false) {
            job.runSynchronously(on: executor)
        }
    }

    private func run() {
        let executor = asUnownedTaskExecutor()
        while let job = nextJob() {
            job.runSynchronously(on: executor)
        }
    }

    /// The next queued job; when there is none, waits for one (`waiting`) or returns nil.
    private func nextJob(waiting: Bool = true) -> UnownedJob? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while head == queue.count {
            if isShutDown || !waiting { return nil }
            idleThreads += 1
            pthread_cond_wait(condition, mutex)
            idleThreads -= 1
        }
        let job = queue[head]
        head += 1
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024, head * 2 >= queue.count {
            queue.removeFirst(head)
            head = 0
        }
        return job
    }
}

/// What a new pool thread runs, passed through `pthread_create`'s context pointer.
private final class ThreadBody {
    let body: @Sendable () -> Void

    init(_ body: @escaping @Sendable () -> Void) {
        self.body = body
    }
}

extension WorkerPool {
    /// Names the calling thread, from inside: Linux threads otherwise keep their creator's name (`top`, `perf` and
    /// debuggers show it). Through `/proc` because glibc's `pthread_setname_np` is not visible to Swift; the kernel
    /// keeps the first 15 bytes.
    static func nameThread(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY)
        guard descriptor >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = write(descriptor, bytes, bytes.count)
        close(descriptor)
    }
}
