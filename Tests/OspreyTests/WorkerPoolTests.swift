import FoundationEssentials
import Synchronization
import Testing

@testable import Osprey

/// The manager's decoding and processing executors: jobs on threads of their own, and a way out when the system
/// starts none.
@Suite struct WorkerPoolTests {
    /// The calling thread's name, as the kernel keeps it.
    static func threadName() -> String {
        let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return name.hasSuffix("\n") ? String(name.dropLast()) : name
    }

    /// Counts the threads a pool asks for, and starts them while `startsThreads` says so.
    final class Starter: Sendable {
        let attempts = Atomic<Int>(0)
        let startsThreads: Atomic<Bool>

        init(startsThreads: Bool) {
            self.startsThreads = Atomic(startsThreads)
        }

        func start(_ body: @escaping @Sendable () -> Void) -> Bool {
            attempts.wrappingAdd(1, ordering: .relaxed)
            return startsThreads.load(ordering: .relaxed) && WorkerPool.startDetachedThread(body)
        }
    }

    @Test("jobs run on the pool's own threads, named after it, never more of them than its thread count")
    func jobsRunOnThePoolsThreads() async {
        let starter = Starter(startsThreads: true)
        let pool = WorkerPool(name: "osprey.test", threadCount: 2, startsThread: starter.start)
        defer { pool.shutdown() }
        let names = await withTaskGroup(of: String.self) { group in
            for _ in 0..<50 {
                group.addTask { await withTaskExecutorPreference(pool) { Self.threadName() } }
            }
            return await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(!names.isEmpty && names.isSubset(of: ["osprey.test-1", "osprey.test-2"]), "\(names)")
        #expect((1...2).contains(starter.attempts.load(ordering: .relaxed)))
    }

    // Without the fallback these jobs would wait forever: the time limit fails them instead.
    @Test(
        "when no thread can be started, the queued jobs run on the thread that queued them instead of waiting",
        .timeLimit(.minutes(1)))
    func withoutThreadsJobsRunOnTheCallersThread() async {
        let starter = Starter(startsThreads: false)
        let pool = WorkerPool(name: "osprey.none", threadCount: 2, startsThread: starter.start)
        defer { pool.shutdown() }
        let results = await withTaskGroup(of: (Int, String).self) { group in
            for index in 0..<10 {
                group.addTask { await withTaskExecutorPreference(pool) { (index * 2, Self.threadName()) } }
            }
            return await group.reduce(into: [(Int, String)]()) { $0.append($1) }
        }
        #expect(results.map(\.0).sorted() == Array(stride(from: 0, to: 20, by: 2)))
        #expect(!results.contains { $0.1.hasPrefix("osprey.none") })
        // Asked for a thread again: one for each job queued while fewer than two starts were under way.
        #expect((1...10).contains(starter.attempts.load(ordering: .relaxed)))
    }

    @Test("a thread that could not be started is started for a later job", .timeLimit(.minutes(1)))
    func aThreadThatFailedToStartIsStartedLater() async {
        let starter = Starter(startsThreads: false)
        let pool = WorkerPool(name: "osprey.late", threadCount: 1, startsThread: starter.start)
        defer { pool.shutdown() }
        let first = await withTaskExecutorPreference(pool) { Self.threadName() }
        #expect(first != "osprey.late-1")
        starter.startsThreads.store(true, ordering: .relaxed)
        let second = await withTaskExecutorPreference(pool) { Self.threadName() }
        #expect(second == "osprey.late-1")
        #expect(starter.attempts.load(ordering: .relaxed) == 2)
    }
}
