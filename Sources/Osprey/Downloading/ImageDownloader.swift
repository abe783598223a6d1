import FoundationEssentials
public import HTTPTypes
import Logging
import NIOCore
import NIOPosix
import Synchronization
internal import Tracing

/// Downloads image data over HTTP/1.1 and HTTP/2: queued by priority, limited in concurrency, and coalesced, so
/// concurrent requests for the same URL make one trip to the origin. One HTTP client of the downloader's own on SwiftNIO
/// speaks to `http` and `https` origins alike (NIOSSL for TLS, HTTP/2 where the origin offers it), traced or not.
///
/// ```swift
/// try await withImageDownloader { downloader in
///     let response = try await downloader.data(for: DownloadRequest(url: url))
///     print(response.statusCode, response.body.count)
/// }
/// ```
///
/// Each downloader owns one HTTP client and its connection pool, shut down by ``shutdown()``, at the end of
/// ``withImageDownloader(configuration:_:)``, or when the downloader is released. ``shared`` lives as long as the
/// process.
///
/// The queue, coalescing and priorities are `DownloadQueueStateMachine`'s; this type performs what it decides: it
/// starts transfers, cancels them, and delivers progress and outcomes to callers, never while holding its lock.
public final class ImageDownloader: DataLoading {
    /// The process's default downloader, with the default configuration.
    public static let shared = ImageDownloader()

    typealias Machine = DownloadQueueStateMachine<DownloadRequest.CoalescingKey>

    struct State {
        var machine: Machine
        var transfers: [Machine.TransferID: TransferRecord] = [:]
        var callers: [Machine.CallerID: CallerRecord] = [:]
        var headers: HTTPFields
        var isShutDown = false
    }

    struct TransferRecord {
        let request: DownloadRequest
        /// The trace of the caller that made the transfer: its span is the parent of the transfer's.
        let context: InstrumentationContext?
        var task: Task<Void, Never>?
    }

    struct CallerRecord {
        let task: DownloadTask
        let progress: (@Sendable (DownloadProgress) -> Void)?
        /// Joined a transfer under way: its first progress report carries every byte so far.
        var needsCatchUp: Bool
    }

    /// The configuration the downloader was made with; the queue's limit, order and headers can change since (see
    /// ``maxConcurrentDownloads``, ``order``, ``headers``).
    public let configuration: Configuration
    /// The cookies kept for requests that handle cookies.
    public let cookies = CookieStore()
    /// The HTTP client: every connection the downloader opens (``HTTPConnections``).
    let connections: HTTPConnections
    let state: Mutex<State>
    let resumableData: ResumableDataStore
    /// Holds back transfer starts past ``Configuration/rateLimit``; `nil` without one.
    let rateLimiter: RateLimiter?
    let metrics: DownloadMetrics
    let tracing: StageTracer
    private let broadcaster = EventBroadcaster<DownloadEvent>()

    /// Makes a downloader with its own HTTP client; shut it down with ``shutdown()`` or let it go.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.rateLimiter = configuration.rateLimit.map { RateLimiter($0, clock: configuration.clock) }
        self.tracing = StageTracer(configuration.tracer)
        self.connections = HTTPConnections(
            group: MultiThreadedEventLoopGroup.singleton, connectTimeout: configuration.effectiveTimeout,
            readTimeout: configuration.effectiveTimeout, idleTimeout: configuration.idleConnectionTimeout,
            connectionsPerOrigin: configuration.connectionsPerHost,
            certificateAuthorities: configuration.certificateAuthorities,
            offersHTTP2: configuration.httpVersion == .automatic)
        self.state = Mutex(
            State(
                machine: Machine(limit: configuration.maxConcurrentDownloads, order: configuration.order),
                headers: configuration.headers))
        self.resumableData = ResumableDataStore(capacity: configuration.resumableDataCount)
        self.metrics = DownloadMetrics(factory: configuration.metricsFactory)
    }

    deinit {
        // Running transfers hold the downloader, so none is running; queued ones may wait (a suspended queue). Their
        // callers must not wait for ever. The client must be shut down before it goes.
        let (isShutDown, waiting) = state.withLock { state in
            (state.isShutDown, state.callers.values.map(\.task))
        }
        for task in waiting { task.complete(.failure(.shutDown)) }
        if !isShutDown { connections.shutdown() }
    }

    // MARK: Downloading

    /// Queues `request` (or joins the transfer under way for an equal one) and returns the caller's task; `progress`
    /// gets every report.
    public func download(
        _ request: DownloadRequest, progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) -> any DataLoadingTask {
        downloadTask(request, progress: progress)
    }

    /// ``download(_:progress:)`` with the concrete task type.
    public func downloadTask(
        _ request: DownloadRequest, progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) -> DownloadTask {
        if let problem = Self.problem(with: request.url) {
            return DownloadTask(priority: request.priority, failure: .invalidRequest(reason: problem))
        }
        let key = request.coalescingKey
        let (task, joined) = state.withLock { state -> (DownloadTask, Bool?) in
            guard !state.isShutDown else {
                return (DownloadTask(priority: request.priority, failure: .shutDown), nil)
            }
            let enqueued = state.machine.enqueue(key: key, priority: request.priority, detached: request.isDetached)
            let caller = enqueued.caller
            let task = DownloadTask(
                priority: request.priority,
                leave: { [weak self] task in
                    guard let self else {
                        task.complete(.failure(.cancelled))
                        return
                    }
                    self.leave(caller, task)
                },
                reprioritise: { [weak self] _, priority in
                    self?.state.withLock { $0.machine.setPriority(priority, of: caller) }
                })
            let isUnderWay = enqueued.joined && state.machine.phase(of: enqueued.transfer) == .running
            state.callers[caller] = CallerRecord(task: task, progress: progress, needsCatchUp: isUnderWay)
            if !enqueued.joined {
                state.transfers[enqueued.transfer] = TransferRecord(
                    request: request, context: tracing.tracer == nil ? nil : InstrumentationContext.current)
            }
            start(enqueued.start, in: &state)
            return (task, enqueued.joined)
        }
        if let joined { metrics.recordCaller(coalesced: joined) }
        return task
    }

    // MARK: Queue

    /// How many transfers run at once: 6 by default. Lowering it cancels nothing; raising it starts
    /// queued transfers at once.
    public var maxConcurrentDownloads: Int {
        get { state.withLock { $0.machine.limit } }
        set { state.withLock { state in start(state.machine.setLimit(newValue), in: &state) } }
    }

    /// FIFO or LIFO within a priority, for transfers that start from now on.
    public var order: Order {
        get { state.withLock { $0.machine.order } }
        set { state.withLock { $0.machine.order = newValue } }
    }

    /// Whether the queue holds back new transfers; running ones go on.
    public var isSuspended: Bool {
        get { state.withLock { $0.machine.isSuspended } }
        set {
            state.withLock { state in
                if newValue { state.machine.suspend() } else { start(state.machine.resume(), in: &state) }
            }
        }
    }

    /// How many transfers are running now, cancelled ones still winding down included.
    public var runningCount: Int { state.withLock { $0.machine.activeCount } }

    /// How many transfers wait for a slot.
    public var queuedCount: Int { state.withLock { $0.machine.queuedCount } }

    /// The headers sent with every request; a request's own headers override them by name.
    public var headers: HTTPFields {
        get { state.withLock { $0.headers } }
        set { state.withLock { $0.headers = newValue } }
    }

    /// Cancels every download, queued or running, detached or not: every caller gets ``DownloadError/cancelled``.
    public func cancelAll() {
        let (tasks, running) = state.withLock { state in
            let cancelled = state.machine.cancelAll()
            for id in cancelled.droppedQueued { state.transfers[id] = nil }
            let tasks = cancelled.callers.compactMap { state.callers.removeValue(forKey: $0)?.task }
            return (tasks, cancelled.cancelRunning.compactMap { state.transfers[$0]?.task })
        }
        for transfer in running { transfer.cancel() }
        for task in tasks { task.complete(.failure(.cancelled)) }
    }

    // MARK: Events

    /// Download started and finished events, from now until the consumer stops or the downloader shuts
    /// down. The newest 1,024 are kept for a slow consumer.
    public func events() -> AsyncStream<DownloadEvent> {
        broadcaster.subscribe()
    }

    // MARK: Lifetime

    /// Cancels every download, ends the event streams and closes the connections. Requests made afterwards fail with
    /// ``DownloadError/shutDown``.
    public func shutdown() async throws {
        let alreadyShutDown = state.withLock { state in
            defer { state.isShutDown = true }
            return state.isShutDown
        }
        guard !alreadyShutDown else { return }
        cancelAll()
        broadcaster.finish()
        connections.shutdown()
    }

    // MARK: Performing the machine's actions

    /// Starts the transfers the machine moved to running. Called with the lock held: creating a task runs nothing.
    private func start(_ ids: [Machine.TransferID], in state: inout State) {
        for id in ids {
            guard let transfer = state.transfers[id] else { continue }
            state.transfers[id]?.task = Task { await self.run(id, transfer.request, context: transfer.context) }
        }
    }

    private func leave(_ caller: Machine.CallerID, _ task: DownloadTask) {
        let transfer = state.withLock { state -> Task<Void, Never>? in
            let left = state.machine.leave(caller)
            state.callers[caller] = nil
            switch left {
            case .unknownCaller, .left:
                return nil
            case .droppedQueued(let id):
                state.transfers[id] = nil
                return nil
            case .cancelRunning(let id):
                return state.transfers[id]?.task
            }
        }
        transfer?.cancel()
        task.complete(.failure(.cancelled))
    }

    private func run(_ id: Machine.TransferID, _ request: DownloadRequest, context: InstrumentationContext?) async {
        // Its span is a child of the caller's that made the transfer; the HTTP client's spans of each request
        // (retries and redirects) nest under it. The span ends before the callers hear, so that it is over by the
        // time anything they do with the response is.
        let (outcome, tasks) = await tracing.withSpan("osprey.download", context: context) { span in
            span.set("url.full", Self.tracedURL(request.url))
            let finished = await transfer(id, request)
            switch finished.outcome {
            case .success(let response):
                span.set("http.response.status_code", response.statusCode)
                span.set("osprey.download.bytes", response.body.count)
            case .failure(let error):
                if case .httpStatus(let code, _) = error { span.set("http.response.status_code", code) }
                span.fail(error)
            }
            return finished
        }
        for task in tasks { task.complete(outcome) }
    }

    /// A URL as a span records it: without a user name and password.
    static func tracedURL(_ url: URL) -> String {
        guard url.user != nil || url.password != nil,
            var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else { return url.absoluteString }
        components.user = nil
        components.password = nil
        return components.string ?? url.absoluteString
    }

    /// Runs one transfer to its end; returns its outcome and the callers still there to deliver it to.
    private func transfer(
        _ id: Machine.TransferID, _ request: DownloadRequest
    ) async -> (outcome: Outcome, callers: [DownloadTask]) {
        // Within the rate limit first: the transfer holds its slot while it waits for its turn to start.
        let mayStart: Bool
        do {
            try await rateLimiter?.acquire()
            mayStart = true
        } catch {
            mayStart = false
        }
        publish(.started(url: request.url))
        configuration.logger.debug("download started", metadata: ["osprey.url": "\(request.url)"])
        let started = ContinuousClock.now
        let outcome =
            mayStart
            ? await performRetrying(request) { body, newFrom, expected in
                self.report(id, body: body, newFrom: newFrom, expected: expected)
            } : .failure(.cancelled)
        let tasks = state.withLock { state in
            let finished = state.machine.finish(id)
            state.transfers[id] = nil
            let tasks = finished.callers.compactMap { state.callers.removeValue(forKey: $0)?.task }
            start(finished.start, in: &state)
            return tasks
        }
        // Counted and announced before the callers hear, so a caller that reads the metrics or events after its
        // response finds this transfer there.
        let duration = ContinuousClock.now - started
        metrics.recordTransfer(outcome, duration: duration)
        let event = DownloadEvent.Outcome(outcome)
        publish(.finished(url: request.url, outcome: event, duration: duration))
        logFinished(request.url, event, duration: duration)
        return (outcome, tasks)
    }

    /// One debug line per transfer (request-level logging, as `osprey --verbose` shows it).
    private func logFinished(_ url: URL, _ outcome: DownloadEvent.Outcome, duration: Duration) {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        switch outcome {
        case .succeeded(let status, let bytes):
            configuration.logger.debug(
                "download finished",
                metadata: [
                    "osprey.url": "\(url)", "osprey.status": "\(status)", "osprey.bytes": "\(bytes)",
                    "osprey.ms": "\(milliseconds)",
                ])
        case .failed(let error):
            configuration.logger.debug(
                "download failed",
                metadata: ["osprey.url": "\(url)", "osprey.error": "\(error)", "osprey.ms": "\(milliseconds)"])
        }
    }

    /// Sends a progress report to each caller of transfer `id` that asked for them.
    private func report(_ id: Machine.TransferID, body: [UInt8], newFrom: Int, expected: Int?) {
        let listeners = state.withLock { state -> [(@Sendable (DownloadProgress) -> Void, Bool)] in
            guard let callers = state.machine.transfers[id]?.callers.keys else { return [] }
            return callers.compactMap { caller in
                guard let record = state.callers[caller], let progress = record.progress else { return nil }
                state.callers[caller]?.needsCatchUp = false
                return (progress, record.needsCatchUp)
            }
        }
        guard !listeners.isEmpty else { return }
        let chunk = Array(body[newFrom...])
        for (progress, needsCatchUp) in listeners {
            progress(
                DownloadProgress(
                    receivedBytes: body.count, expectedBytes: expected, newBytes: needsCatchUp ? body : chunk))
        }
    }

    private func publish(_ event: DownloadEvent) {
        broadcaster.publish(event)
    }

    /// Why `url` cannot be downloaded, or `nil`.
    static func problem(with url: URL) -> String? {
        do {
            try URLValidation.validate(url)
            return nil
        } catch {
            return error.description
        }
    }
}

/// Runs `body` with a new downloader and shuts it down afterwards, whether `body` returns or throws; `body` runs on
/// the caller's actor.
nonisolated(nonsending) public func withImageDownloader<Result>(
    configuration: ImageDownloader.Configuration = ImageDownloader.Configuration(),
    _ body: (ImageDownloader) async throws -> Result
) async throws -> Result {
    let downloader = ImageDownloader(configuration: configuration)
    do {
        let result = try await body(downloader)
        try await downloader.shutdown()
        return result
    } catch {
        try? await downloader.shutdown()
        throw error
    }
}
