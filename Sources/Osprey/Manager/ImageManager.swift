public import Dispatch
public import FoundationEssentials
public import OspreyCodecs
import Synchronization
public import Tracing

/// Loads images: memory cache, then disk cache, then download, decode, transform, process, store, deliver — the
/// seeds' SDWebImageManager and KingfisherManager for server-side Swift.
///
/// ```swift
/// let manager = ImageManager(cache: ImageCache(configuration: .init(namespace: "thumbnails")),
///                            downloader: ImageDownloader.shared)
/// let result = try await manager.image(for: "https://example.com/cat.jpg")
/// print(result.image.width, result.cacheType)          // e.g. 640, .notCached — then .memory on the next call
///
/// let task = manager.loadImage(with: "https://example.com/dog.jpg", options: [.refreshCached]) { outcome in
///     print(outcome)                                   // called once, on the callback queue (.cancelled after cancel())
/// }
/// task.cancel()
/// ```
///
/// One flow serves the three entry points: ``image(for:)-(ImageRequest)`` (async/await),
/// `loadImage(with:options:callbackQueue:progress:preview:completion:)` (callbacks on a queue of the caller's
/// choice) and ``task(for:)`` (an `AsyncStream` of events). A memory hit is answered on the caller's thread; anything
/// else runs as a *job* shared by every load of the same URL with the same processors, size and options, and the
/// download is shared by every job for the URL (the downloader coalesces it). Decoding and processing run on the
/// manager's own bounded threads, never on the caller's.
public final class ImageManager: Sendable {
    /// The process's default manager: ``ImageCache`` with the default configuration and ``ImageDownloader/shared``.
    public static let shared = ImageManager()

    /// The two cache levels.
    public let cache: ImageCache
    /// Where data comes from.
    public let loader: any DataLoading
    /// The configuration it was made with.
    public let configuration: Configuration
    /// The URLs that failed for a lasting reason.
    public let failedURLs: FailedURLs
    /// The decoding stage of downloaded images: suspend it to hold loads between their download and their decode,
    /// watch its operations start and finish. (A disk-cache hit decodes in its lookup, outside it.)
    public let decodingQueue = StageQueue(name: "decoding")
    /// The processing stage (the transform hook and the request's processors): suspend it to hold loads before they
    /// are processed, watch its operations start and finish.
    public let processingQueue = StageQueue(name: "processing")

    let decodingPool: WorkerPool
    /// How many decodes ran, were shared and were cancelled (the decodes themselves are jobs of the table).
    let decodeCounts = DecodeCounts()
    /// How many images ``encodedImage(for:as:)`` encoded.
    let encodeCount = Atomic<Int>(0)
    let processingPool: WorkerPool
    let callbackQueue: DispatchQueue
    /// Makes the stages' spans.
    let tracing: StageTracer
    /// The table of jobs and subscribers, the loads and the work behind each job (``ImageManager/State``).
    let state = Mutex(State())

    /// Makes a manager from a cache and a loader of the caller's: composition, not subclassing.
    public init(
        cache: ImageCache = ImageCache(), downloader: any DataLoading = ImageDownloader.shared,
        configuration: Configuration = Configuration()
    ) {
        self.cache = cache
        self.loader = downloader
        self.configuration = configuration
        self.failedURLs = FailedURLs(timeToLive: configuration.failedURLTimeToLive)
        self.decodingPool = WorkerPool(name: "osprey.decode", threadCount: configuration.decodingConcurrency)
        self.processingPool = WorkerPool(name: "osprey.proc", threadCount: configuration.processingConcurrency)
        self.callbackQueue = configuration.callbackQueue ?? DispatchQueue(label: "osprey.manager.callbacks")
        self.tracing = StageTracer(configuration.tracer)
    }

    /// The tracer the manager's spans go to: the configuration's, else the one the process bootstrapped; `nil` when
    /// there is none (the manager makes no span).
    public var tracer: (any Tracer)? { tracing.tracer }

    deinit {
        decodingPool.shutdown()
        processingPool.shutdown()
    }

    // MARK: Loading: async/await

    /// Loads the image at `url`; see ``image(for:)-(ImageRequest)``.
    nonisolated(nonsending) public func image(
        for url: URL, options: ImageRequest.Options = []
    ) async throws(ImageError) -> ImageResult {
        try await image(for: ImageRequest(url: url, options: options))
    }

    /// Loads the image at the URL in `string`; an empty or malformed string fails at once with
    /// ``ImageError/invalidURL(_:reason:)``.
    nonisolated(nonsending) public func image(
        for string: String, options: ImageRequest.Options = []
    ) async throws(ImageError) -> ImageResult {
        try await image(for: ImageRequest(string: string, options: options))
    }

    /// Loads `request` and returns the final result; cancelling the calling task cancels the load
    /// (``ImageError/cancelled``). Under ``ImageRequest/Options/refreshCached`` it returns once the origin has been
    /// asked: the cached image when unchanged, else the new one (the early delivery is for ``task(for:)`` and the
    /// callback form).
    nonisolated(nonsending) public func image(for request: ImageRequest) async throws(ImageError) -> ImageResult {
        // The memory hit is answered here, not through `image(for:keys:)`: another async call on the hottest path
        // copies the request and the result into a frame of its own (0.65 µs a hit that way, 0.60 µs this way).
        let keys = cacheKeys(for: request)
        if let immediate = immediateOutcome(for: request, keys: keys) { return try immediate.get() }
        return try await loadThroughJob(request, keys: keys)
    }

    /// ``image(for:)-(ImageRequest)`` with the request's keys made already (an encoded load's).
    nonisolated(nonsending) func image(
        for request: ImageRequest, keys: CacheKeys
    ) async throws(ImageError) -> ImageResult {
        if let immediate = immediateOutcome(for: request, keys: keys) { return try immediate.get() }
        return try await loadThroughJob(request, keys: keys)
    }

    /// A load that memory did not answer: a task of its own, subscribed to the job for its keys.
    nonisolated(nonsending) private func loadThroughJob(
        _ request: ImageRequest, keys: CacheKeys
    ) async throws(ImageError) -> ImageResult {
        let task = makeTask(request, sink: .waiter)
        return try await task.wait { start(task, keys: keys, memoryChecked: true) }.get()
    }

    // MARK: Loading: callbacks

    /// Loads the image at the URL in `string`, calling back on `callbackQueue` (the manager's
    /// ``Configuration/callbackQueue`` when `nil`); see ``loadImage(with:callbackQueue:progress:preview:completion:)``.
    @discardableResult
    public func loadImage(
        with string: String, options: ImageRequest.Options = [], callbackQueue: DispatchQueue? = nil,
        progress: (@Sendable (DownloadProgress) -> Void)? = nil, preview: (@Sendable (ImageResult) -> Void)? = nil,
        completion: @escaping @Sendable (Result<ImageResult, ImageError>) -> Void
    ) -> ImageTask {
        let callbacks = makeCallbacks(callbackQueue, progress, preview, completion)
        return loadImage(named: string, callbacks: callbacks) { () throws(ImageError) in
            try ImageRequest(string: string, options: options)
        }
    }

    /// Loads the image at `url`; see ``loadImage(with:callbackQueue:progress:preview:completion:)``.
    @discardableResult
    public func loadImage(
        with url: URL, options: ImageRequest.Options = [], callbackQueue: DispatchQueue? = nil,
        progress: (@Sendable (DownloadProgress) -> Void)? = nil, preview: (@Sendable (ImageResult) -> Void)? = nil,
        completion: @escaping @Sendable (Result<ImageResult, ImageError>) -> Void
    ) -> ImageTask {
        let callbacks = makeCallbacks(callbackQueue, progress, preview, completion)
        return loadImage(named: url.absoluteString, callbacks: callbacks) { () throws(ImageError) in
            try ImageRequest(url: url, options: options)
        }
    }

    /// Loads `request` and returns its task at once. `progress` gets every progress report, `preview` every
    /// not-final image (progressive previews, the cached image of a `refreshCached` load), and `completion` the final
    /// outcome exactly once — ``ImageError/cancelled`` after ``ImageTask/cancel()`` — all on `callbackQueue`, in
    /// order.
    @discardableResult
    public func loadImage(
        with request: ImageRequest, callbackQueue: DispatchQueue? = nil,
        progress: (@Sendable (DownloadProgress) -> Void)? = nil, preview: (@Sendable (ImageResult) -> Void)? = nil,
        completion: @escaping @Sendable (Result<ImageResult, ImageError>) -> Void
    ) -> ImageTask {
        loadImage(with: request, callbacks: makeCallbacks(callbackQueue, progress, preview, completion))
    }

    private func makeCallbacks(
        _ queue: DispatchQueue?, _ progress: (@Sendable (DownloadProgress) -> Void)?,
        _ preview: (@Sendable (ImageResult) -> Void)?,
        _ completion: @escaping @Sendable (Result<ImageResult, ImageError>) -> Void
    ) -> ImageTask.Callbacks {
        ImageTask.Callbacks(queue: queue ?? callbackQueue, progress: progress, preview: preview, completion: completion)
    }

    /// Loads the request `makeRequest` builds; when it throws (a bad URL), returns a task for `name` that has
    /// already failed, so the caller still gets a handle and one completion.
    private func loadImage(
        named name: String, callbacks: ImageTask.Callbacks, _ makeRequest: () throws(ImageError) -> ImageRequest
    ) -> ImageTask {
        do {
            return loadImage(with: try makeRequest(), callbacks: callbacks)
        } catch {
            return failedTask(string: name, error: error, callbacks: callbacks)
        }
    }

    private func loadImage(with request: ImageRequest, callbacks: ImageTask.Callbacks) -> ImageTask {
        let task = makeTask(request, sink: .callbacks(callbacks))
        start(task, keys: cacheKeys(for: request))
        return task
    }

    private func failedTask(string: String, error: ImageError, callbacks: ImageTask.Callbacks) -> ImageTask {
        // A task for the bad string, so the caller still gets a handle and one completion; its request only
        // names the string as well as a URL can.
        let request = ImageRequest(unvalidated: URL(string: string) ?? URL(fileURLWithPath: "/"))
        let task = makeTask(request, sink: .callbacks(callbacks))
        task.deliver(.finished(.failure(error)))
        return task
    }

    // MARK: Loading: events

    /// Starts loading `request` and returns its task, whose ``ImageTask/events`` report progress, previews and the
    /// final outcome. Ending the stream's iteration early cancels the load.
    public func task(for request: ImageRequest) -> ImageTask {
        let (events, continuation) = AsyncStream.makeStream(of: ImageTask.Event.self)
        let task = makeTask(request, sink: .stream(continuation), events: events)
        continuation.onTermination = { [weak task] termination in
            if case .cancelled = termination { task?.cancel() }
        }
        start(task, keys: cacheKeys(for: request))
        return task
    }

    // MARK: Running loads

    /// Whether any load is under way.
    public var isRunning: Bool { state.withLock { !$0.tasks.isEmpty } }

    /// How many loads are under way.
    public var runningCount: Int { state.withLock { $0.tasks.count } }

    /// Cancels every load under way (an encode some load asked to be ``ImageRequest/Options/detached`` runs on).
    public func cancelAll() {
        cancelEverything(shuttingDown: false)
    }

    /// Cancels every image load under way of `url` — whatever its processors, size or options, from any of the three
    /// entry points — as SDWebImage's `cancel(url:)` does: each completes once with ``ImageError/cancelled``, and a
    /// download no other load shares stops. Loads of other URLs, and ``encodedImage(for:as:)`` callers, are not
    /// touched. Returns how many loads were cancelled.
    @discardableResult
    public func cancel(url: URL) -> Int {
        let matching = state.withLock { state in state.tasks.values.filter { $0.request.url == url } }
        return matching.reduce(0) { count, task in count + (task.cancelIfRunning() ? 1 : 0) }
    }

    // MARK: Lifetime

    /// Ends the manager's work: every image load under way is cancelled (an async load throws
    /// ``ImageError/cancelled``; a callback load is called back once with it), a detached job runs to its end, and
    /// once every job has ended the manager's decoding and processing threads stop. A data load under way, which
    /// holds none of them, runs to its end in its caller's task. Every load asked for afterwards, image or data,
    /// fails at once with ``ImageError/cancelled``. Calling it again waits for the same end.
    /// ``withImageManager(cache:configuration:downloader:_:)`` calls it for you.
    public func shutdown() async {
        let first = cancelEverything(shuttingDown: true)
        await waitForJobs()
        if first {
            decodingPool.shutdown()
            processingPool.shutdown()
        }
    }

    /// Whether ``shutdown()`` was called.
    public var isShutDown: Bool { state.withLock { $0.table.isShutDown } }

    // MARK: Statistics

    /// What the manager has done so far, counted since it was made.
    public struct Statistics: Sendable, Hashable {
        /// Full decodes of downloaded or cached bytes (progressive previews are not counted).
        public var decodes: Int
        /// Loads that used a decode another load of the same source ran (another size, other processors).
        public var sharedDecodes: Int
        /// Images encoded by ``ImageManager/encodedImage(for:as:)``.
        public var encodes: Int
    }

    /// What the manager has done so far.
    public var statistics: Statistics {
        Statistics(
            decodes: decodeCounts.decodeCount, sharedDecodes: decodeCounts.sharedCount,
            encodes: encodeCount.load(ordering: .relaxed))
    }

    // MARK: Failed URLs

    /// Takes `url` off the failed-URL list.
    public func removeFailedURL(_ url: URL) {
        failedURLs.remove(url)
    }

    /// Empties the failed-URL list.
    public func removeAllFailedURLs() {
        failedURLs.removeAll()
    }

    // MARK: Cache

    /// The cache key of `url`: the configuration's ``Configuration/cacheKeyFilter``, else the absolute string.
    public func cacheKey(for url: URL) -> String {
        configuration.cacheKeyFilter?(url) ?? url.absoluteString
    }

    /// Whether the image at `url` is cached, in memory or on disk.
    public func isCached(_ url: URL) async -> Bool {
        await cache.isCached(forKey: cacheKey(for: url))
    }

    /// The URLs among `urls` whose original bytes are cached (bytes in memory, or on disk), looked up together: one
    /// disk-cache query per 128 URLs where ``isCachedOnDisk(_:)`` is one each. What a prefetch skips.
    public func urlsWithCachedData(_ urls: [URL]) async -> Set<URL> {
        let keys = urls.map(cacheKey(for:))
        let cached = await cache.keysWithStoredData(among: Array(Set(keys)))
        return Set(zip(urls, keys).filter { cached.contains($0.1) }.map(\.0))
    }

    /// Whether the image at `url` is cached on disk.
    public func isCachedOnDisk(_ url: URL) async -> Bool {
        await cache.isCachedOnDisk(forKey: cacheKey(for: url))
    }

    /// Stores `image` for `url` in memory and, with `toDisk`, on disk: `data` when given, else the image encoded with
    /// the manager's coders (``Configuration/decoding``).
    public func store(_ image: Image, data: [UInt8]? = nil, for url: URL, toDisk: Bool = true) async throws(CacheError)
    {
        try await cache.store(
            image, data: data, forKey: cacheKey(for: url), toDisk: toDisk, coders: configuration.decoding.coders)
    }

    // MARK: Internals

    private func makeTask(
        _ request: ImageRequest, sink: ImageTask.Sink, events: AsyncStream<ImageTask.Event>? = nil
    ) -> ImageTask {
        state.withLock { state in
            let task = ImageTask(
                id: state.makeLoadNumber(), request: request, sink: sink, events: events, manager: self)
            state.tasks[task.id] = task
            return task
        }
    }

    /// The outcome a load has before any job: a URL on the failed list, or a memory hit (looked up only when the
    /// request keeps its final image: an encoded load keeps the encoded bytes instead).
    func immediateOutcome(for request: ImageRequest, keys: CacheKeys) -> Result<ImageResult, ImageError>? {
        if isShutDown { return .failure(.cancelled) }
        if hasNoSourceLeft(request) {
            return .failure(.previouslyFailed(request.url, reason: failedURLs.failure(for: request.url)))
        }
        guard request.keepsVariant, request.options.isDisjoint(with: [.fromLoaderOnly, .refreshCached]) else {
            return nil
        }
        let cache = request.cache ?? self.cache
        guard let image = cache.imageInMemory(forKey: keys.image) else { return nil }
        return .success(ImageResult(image: image, data: nil, cacheType: .memory, url: request.url))
    }
}

/// Runs `body` with a manager of its own — its own downloader (made with `downloader`), decoding and processing
/// threads — and shuts both down when `body` returns or throws: loads still under way are cancelled, and nothing of
/// the manager outlives the call. `body` runs on the caller's actor (a `@main` program's main actor included).
///
/// ```swift
/// let sizes = try await withImageManager { manager in
///     try await manager.image(for: url).image.width
/// }
/// ```
nonisolated(nonsending) public func withImageManager<Result>(
    cache: ImageCache = ImageCache(), configuration: ImageManager.Configuration = ImageManager.Configuration(),
    downloader: ImageDownloader.Configuration = ImageDownloader.Configuration(),
    _ body: (ImageManager) async throws -> Result
) async throws -> Result {
    try await withImageDownloader(configuration: downloader) { loader in
        let manager = ImageManager(cache: cache, downloader: loader, configuration: configuration)
        do {
            let result = try await body(manager)
            await manager.shutdown()
            return result
        } catch {
            await manager.shutdown()
            throw error
        }
    }
}
