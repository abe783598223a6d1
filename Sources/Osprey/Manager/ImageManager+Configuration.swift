public import Dispatch
public import FoundationEssentials
public import Logging
public import OspreyCodecs
public import Tracing

extension ImageManager {
    /// How a manager names, guards, transforms and stores what it loads.
    public struct Configuration: Sendable {
        // MARK: Keys

        /// Turns a URL into its cache key: drop a token from the query, fold mirrors into one name. `nil` (the
        /// absolute URL string) by default. The key of a redirected image is always its requested URL's.
        public var cacheKeyFilter: (@Sendable (URL) -> String)?

        // MARK: Hooks

        /// Asked on a cache miss before downloading; returning `false` ends the load with
        /// ``ImageError/downloadDeclined(_:)``, or with the cached image under `refreshCached`. `nil` (always
        /// download) by default.
        public var shouldDownload: (@Sendable (URL) -> Bool)?
        /// Runs after a download, before caching, on the processing executor: returns the image to keep, or
        /// `nil` to keep the downloaded one untouched. Skipped for animated images unless the request has
        /// ``ImageRequest/Options/transformAnimatedImage``. A transformed image is cached re-encoded (in its
        /// `Image.sourceFormat`, PNG when it has alpha or none); an untouched one as the downloaded bytes. `nil` by
        /// default.
        public var transformDownloadedImage: (@Sendable (Image, URL) throws -> Image?)?

        // MARK: Failed URLs

        /// How long a URL stays on the failed-URL list. `nil` (until it loads, or is removed) by default, as in
        /// the seeds.
        public var failedURLTimeToLive: Duration?

        // MARK: Decoding and processing

        /// How images are decoded: limits, orientation. The request's size, budget and first-frame option are
        /// applied on top. Default options by default.
        public var decoding = DecodingOptions()
        /// The pixel budget of ``ImageRequest/Options/scaleDownLargeImages`` when the request sets none:
        /// 15,728,640 pixels (60 MiB of RGBA, the seeds' default) by default.
        public var scaleDownPixelBudget = 15_728_640
        /// The memory decodes reserve before they start (what the header says decoding and processing will take)
        /// and wait for while others hold it; `nil` for none. ``MemoryBudget/shared`` (half the memory available to
        /// the process) by default. Managers that share one budget share its memory.
        public var memoryBudget: MemoryBudget? = .shared
        /// How many decodes (and disk reads) run at once, on the manager's own threads: the number of processors by
        /// default.
        public var decodingConcurrency = ProcessInfo.processInfo.activeProcessorCount
        /// How many processor runs (and transform hooks) run at once, on the manager's own threads: the number of
        /// processors by default.
        public var processingConcurrency = ProcessInfo.processInfo.activeProcessorCount

        // MARK: Storing

        /// Also store processed variants on disk, encoded in the source format (PNG when it has alpha or none), so a
        /// later load of the variant decodes it without processing again. `false` by default: the disk keeps the
        /// original bytes only, and variants are derived from them (no new download) and kept in memory; that keeps
        /// one file per URL and never re-encodes an image lossily twice. Turn it on when processing is costly and
        /// disk is cheap (the proxy's rendered results).
        public var storesProcessedImagesOnDisk = false

        /// Whether the caches serve many users, as a proxy's do (RFC 9111's "shared cache"): then an image whose
        /// origin sent `Cache-Control: private` is kept in no cache, like one sent with `no-store`. `false` by
        /// default: a `no-store` image is kept in memory for this process but never written to disk, and a `private`
        /// one is cached as usual.
        public var isSharedCache = false

        // MARK: Callbacks

        /// Where `ImageManager.loadImage(with:options:callbackQueue:progress:preview:completion:)` calls back when
        /// the call names no queue: a serial queue of the manager's own by default.
        public var callbackQueue: DispatchQueue?

        // MARK: Logging

        /// Where the manager reports what it cannot do quietly (a failed disk write). Label `osprey.manager` by
        /// default.
        public var logger = Logger(label: "osprey.manager")
        /// Where the spans of a load's stages go, each a child of the span current where the load was asked for:
        /// `osprey.cache.lookup`, `osprey.decode`, `osprey.process`, `osprey.encode` and `osprey.cache.store` (the
        /// downloader makes `osprey.download`). A load that joins another's work adds none: the work's spans are in the
        /// trace of the load that started it. `nil` (the tracer the process bootstrapped with
        /// `InstrumentationSystem.bootstrap`, if any) by default.
        public var tracer: (any Tracer)?

        /// The default configuration.
        public init() {}

        /// Test hook: awaited at the start of each stage of a job, so a test can hold a load inside a stage.
        package var stageObserver: (@Sendable (Stage, URL) async -> Void)?
    }

    /// The stages of a load, in order.
    package enum Stage: String, Sendable, CaseIterable {
        case disk
        case download
        case decode
        case process
        case store
    }
}
