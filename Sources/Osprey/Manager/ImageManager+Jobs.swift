import Synchronization

// The manager's one place of coordination: a ``JobTable`` of jobs and subscribers behind the manager's lock, beside
// the loads and the work each job runs. Every event (a load starts, leaves, changes priority; a job's stage ends; the
// manager shuts down) asks the table under the lock and performs its actions outside it: cancelling a runner, moving a
// download's priority, delivering to tasks and resuming continuations.
extension ImageManager {
    /// What makes two loads one job: one variant's image, or its encoded bytes.
    enum JobKey: Hashable, Sendable {
        case image(ImageJob.Key)
        case encoded(ImageJob.Key)
    }

    typealias Jobs = JobTable<JobKey, DecodeSource>

    /// Everything the manager coordinates.
    struct State {
        var table = Jobs()
        /// Image loads from made to ended, subscribed to a job or not (a memory hit never is), by number.
        var tasks: [Int: ImageTask] = [:]
        /// Callers of ``encodedImage(for:as:)`` and where each stands, by number.
        var encodedLoads: [Int: EncodedLoad] = [:]
        /// What each job in the table runs.
        var work: [Jobs.JobID: JobWork] = [:]
        /// What each decode in the table runs, and who waits for it (ImageManager+Decodes.swift).
        var decodeWork: [Jobs.DecodeID: DecodeWork] = [:]
        /// Numbers loads and subscribers; one sequence for both kinds of load.
        var nextLoad = 0
        /// Callers of ``waitForJobs()``, resumed once no job is left.
        var idleWaiters: [CheckedContinuation<Void, Never>] = []

        mutating func makeLoadNumber() -> Int {
            nextLoad &+= 1
            return nextLoad
        }
    }

    /// The work behind one job of the table.
    struct JobWork {
        /// The task running the job's stages; `nil` until made (the job is in the table first, so that no two loads
        /// start it).
        var runner: Task<Void, Never>?
        /// The job's download once asked for, so that priority changes reach it.
        var download: (any DataLoadingTask)?
    }

    /// Where one caller of ``encodedImage(for:as:)`` stands.
    enum EncodedLoad {
        /// Subscribed, not suspended yet.
        case subscribed
        /// Suspended until its job's outcome.
        case waiting(CheckedContinuation<Result<EncodedResult, ImageError>, Never>)
        /// The outcome came before it suspended.
        case delivered(Result<EncodedResult, ImageError>)
    }

    private static func subscriber(_ number: Int) -> Jobs.SubscriberID { Jobs.SubscriberID(rawValue: number) }

    // MARK: Image loads

    /// Starts `task`, whose request is cached under `keys`: answers it at once when it can (unless its memory was
    /// looked up already, `memoryChecked`), else subscribes it to the job for its key, starting one.
    func start(_ task: ImageTask, keys: CacheKeys, memoryChecked: Bool = false) {
        if !memoryChecked, let immediate = immediateOutcome(for: task.request, keys: keys) {
            task.deliver(.finished(immediate))
            return
        }
        let request = task.request
        let key = jobKey(for: request, keys: keys)
        enum Start {
            case cancelledMeanwhile
            case shutDown
            case joined(Action)
            case new(ImageJob)
        }
        let start = state.withLock { state -> Start in
            // A task cancelled before this point has left `tasks` already, under this lock.
            guard state.tasks[task.id] != nil else { return .cancelledMeanwhile }
            let subscribed = state.table.subscribe(
                Self.subscriber(task.id), to: .image(key), priority: task.priority,
                detached: request.options.contains(.detached), waitsForStore: request.options.contains(.waitStoreCache))
            guard let subscribed else { return .shutDown }
            guard subscribed.isNew else {
                return .joined(Self.downloadMove(subscribed.job, to: subscribed.priority, in: state))
            }
            state.work[subscribed.job] = JobWork()
            return .new(ImageJob(id: subscribed.job, key: key, baseKey: keys.base, request: request, manager: self))
        }
        switch start {
        case .cancelledMeanwhile: return
        case .shutDown: task.deliver(.finished(.failure(.cancelled)))
        case .joined(let action): Self.perform(action)
        case .new(let job): run(job.id) { await job.run() }
        }
    }

    /// `task` was cancelled: it leaves its job, which is cancelled when it was the last to want it.
    func taskCancelled(_ task: ImageTask) {
        let action = state.withLock { state in
            state.tasks[task.id] = nil
            return Self.action(for: state.table.leave(Self.subscriber(task.id)), in: state)
        }
        Self.perform(action)
    }

    /// `task` ended (delivered to, or cancelled).
    func taskEnded(_ task: ImageTask) {
        _ = state.withLock { $0.tasks.removeValue(forKey: task.id) }
    }

    /// `task`'s priority changed: its job's download moves to the highest of its subscribers'.
    func taskPriorityChanged(_ task: ImageTask) {
        let action = state.withLock { state -> Action in
            // Read under the lock, so that of two changes racing, the last one here wins in the table too.
            guard let (job, priority) = state.table.setPriority(task.priority, of: Self.subscriber(task.id)) else {
                return .none
            }
            return Self.downloadMove(job, to: priority, in: state)
        }
        Self.perform(action)
    }

    /// The tasks subscribed to `job`, in the order they came.
    func subscribers(of job: Jobs.JobID) -> [ImageTask] {
        state.withLock { state in state.table.subscribers(of: job).compactMap { state.tasks[$0.rawValue] } }
    }

    /// The priority `job` downloads at: the highest of its subscribers'.
    func priority(of job: Jobs.JobID) -> DownloadPriority? {
        state.withLock { $0.table.priority(of: job) }
    }

    /// Whether a subscriber of `job` wants the disk store done before delivery.
    func waitsForStore(_ job: Jobs.JobID) -> Bool {
        state.withLock { $0.table.waitsForStore(job) }
    }

    /// Records `job`'s download, moved at once to the job's priority if that changed since it was asked for.
    func downloadStarted(_ download: any DataLoadingTask, for job: Jobs.JobID) {
        let priority = state.withLock { state -> DownloadPriority? in
            state.work[job]?.download = download
            return state.table.priority(of: job)
        }
        if let priority, download.priority != priority { download.setPriority(priority) }
    }

    /// `job`'s outcome is made: every subscriber gets it, and later loads of its key start a job of their own.
    func deliver(_ outcome: Result<ImageResult, ImageError>, from job: Jobs.JobID) {
        let tasks = state.withLock { state in
            state.work[job]?.download = nil
            return state.table.deliver(job).compactMap { state.tasks[$0.rawValue] }
        }
        for task in tasks { task.deliver(.finished(outcome)) }
    }

    // MARK: Encoded loads

    /// Subscribes a caller of ``encodedImage(for:as:)`` to the job for `key`; returns its number and, when the job is
    /// new, the job to start. `nil` once shut down.
    func subscribeEncoded(
        to key: ImageJob.Key, priority: DownloadPriority, detached: Bool
    ) -> (number: Int, new: Jobs.JobID?)? {
        state.withLock { state in
            let number = state.makeLoadNumber()
            let subscribed = state.table.subscribe(
                Self.subscriber(number), to: .encoded(key), priority: priority, detached: detached)
            guard let subscribed else { return nil }
            state.encodedLoads[number] = .subscribed
            guard subscribed.isNew else { return (number, nil) }
            state.work[subscribed.job] = JobWork()
            return (number, subscribed.job)
        }
    }

    /// Waits for the outcome of the encoded load `number`; cancelling the calling task makes it leave at once
    /// (``ImageError/cancelled``), cancelling the job when it was the last to want it.
    func waitForEncoded(_ number: Int) async -> Result<EncodedResult, ImageError> {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Result<EncodedResult, ImageError>? in
                    switch state.encodedLoads[number] {
                    case .delivered(let outcome):
                        state.encodedLoads[number] = nil
                        return outcome
                    case .subscribed, .waiting:
                        state.encodedLoads[number] = .waiting(continuation)
                        return nil
                    case nil:
                        // It left (cancelled) before suspending.
                        return .failure(.cancelled)
                    }
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            leaveEncoded(number)
        }
    }

    private func leaveEncoded(_ number: Int) {
        let (load, action) = state.withLock { state in
            let load = state.encodedLoads.removeValue(forKey: number)
            return (load, Self.action(for: state.table.leave(Self.subscriber(number)), in: state))
        }
        if case .waiting(let continuation) = load { continuation.resume(returning: .failure(.cancelled)) }
        Self.perform(action)
    }

    /// The encoded job's outcome is made: every caller waiting for it gets it.
    func deliverEncoded(_ outcome: Result<EncodedResult, ImageError>, from job: Jobs.JobID) {
        let waiting = state.withLock { state in
            var waiting: [CheckedContinuation<Result<EncodedResult, ImageError>, Never>] = []
            for subscriber in state.table.deliver(job) {
                switch state.encodedLoads[subscriber.rawValue] {
                case .waiting(let continuation):
                    state.encodedLoads[subscriber.rawValue] = nil
                    waiting.append(continuation)
                case .subscribed:
                    state.encodedLoads[subscriber.rawValue] = .delivered(outcome)
                case .delivered, nil:
                    break
                }
            }
            return waiting
        }
        for continuation in waiting { continuation.resume(returning: outcome) }
    }

    // MARK: Jobs' work

    /// Runs `job`'s work on a task of its own, which leaves the table when the work ends; a job cancelled before its
    /// runner was made is cancelled at once.
    func run(_ job: Jobs.JobID, _ work: @escaping @Sendable () async -> Void) {
        let runner = Task {
            await work()
            self.ended(job)
        }
        let cancelled = state.withLock { state in
            state.work[job]?.runner = runner
            return state.table.phase(of: job) == .cancelled
        }
        if cancelled { runner.cancel() }
    }

    private func ended(_ job: Jobs.JobID) {
        let idleWaiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.work[job] = nil
            guard state.table.end(job) else { return [] }
            defer { state.idleWaiters = [] }
            return state.idleWaiters
        }
        for waiter in idleWaiters { waiter.resume() }
    }

    /// Waits until every job has ended, abandoned and detached ones included, with what follows their delivery
    /// (``shutdown()`` and the tests use it to know that nothing more will be delivered or written).
    func waitForJobs() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state in
                if state.table.isIdle { return true }
                state.idleWaiters.append(waiter)
                return false
            }
            if idle { waiter.resume() }
        }
    }

    /// Cancels every load under way and every job no load asked to be detached; with `shuttingDown`, no load is
    /// taken afterwards. Returns whether this call shut the manager down.
    @discardableResult
    func cancelEverything(shuttingDown: Bool) -> Bool {
        typealias Continuation = CheckedContinuation<Result<EncodedResult, ImageError>, Never>
        let (first, tasks, waiting, runners) = state.withLock {
            state -> (Bool, [ImageTask], [Continuation], [Task<Void, Never>]) in
            let first = shuttingDown && !state.table.isShutDown
            let cancelled = shuttingDown ? state.table.shutDown() : state.table.cancelAll()
            var waiting: [Continuation] = []
            for (number, load) in state.encodedLoads {
                switch load {
                case .waiting(let continuation):
                    waiting.append(continuation)
                    state.encodedLoads[number] = nil
                case .subscribed:
                    state.encodedLoads[number] = .delivered(.failure(.cancelled))
                case .delivered:
                    break
                }
            }
            let runners = cancelled.cancel.compactMap { state.work[$0]?.runner }
            // Every task, subscribed or about to be: each leaves `tasks` as it is cancelled.
            return (first, Array(state.tasks.values), waiting, runners)
        }
        for task in tasks { task.cancel() }
        for continuation in waiting { continuation.resume(returning: .failure(.cancelled)) }
        for runner in runners { runner.cancel() }
        return first
    }

    // MARK: Actions

    /// What the I/O layer does, outside the lock, after an event.
    enum Action {
        case none
        /// Move a job's download to a new priority.
        case move(any DataLoadingTask, DownloadPriority)
        /// Cancel a job's runner (`nil`: not made yet; ``run(_:_:)`` cancels it as it is made).
        case cancel(Task<Void, Never>?)
    }

    /// What to do about a subscriber that left.
    private static func action(for left: Jobs.Left, in state: State) -> Action {
        switch left {
        case .unknownSubscriber: .none
        case .left(let job, let priority): downloadMove(job, to: priority, in: state)
        case .cancel(let job): .cancel(state.work[job]?.runner)
        }
    }

    /// Moving the download of `job` to `priority`, when there is both.
    private static func downloadMove(_ job: Jobs.JobID, to priority: DownloadPriority?, in state: State) -> Action {
        guard let priority, let download = state.work[job]?.download else { return .none }
        return .move(download, priority)
    }

    private static func perform(_ action: Action) {
        switch action {
        case .none:
            break
        case .move(let download, let priority):
            if download.priority != priority { download.setPriority(priority) }
        case .cancel(let runner):
            runner?.cancel()
        }
    }
}
