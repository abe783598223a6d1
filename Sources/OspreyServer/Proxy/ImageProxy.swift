import Crypto
import FoundationEssentials
import Logging
import NIOCore
import Osprey
import OspreyCodecs
import Prometheus
import Synchronization
import Tracing

/// An image rendered for a request, as the response sends it: its bytes, their format and ETag, and what caches may
/// keep it.
struct RenderedImage: Sendable {
    let bytes: ByteBuffer
    let format: ImageFormat
    /// A strong validator: a hash of the bytes, which depend on nothing but the source's bytes and the parameters,
    /// so it changes exactly when one of them changes the output.
    let etag: String
    /// What the source's origin lets caches keep: a render of a `private` or `no-store` source is kept in none of the
    /// proxy's caches, and its response tells the caches in front.
    let storagePermission: StoragePermission
    /// The quality `q=auto` (or `mb`) chose, answered as `Osprey-Quality`: for bytes encoded now, kept in memory or
    /// read back from the disk cache (which keeps it beside them).
    let quality: Int?

    init(_ encoded: EncodedImage, storagePermission: StoragePermission = .anyCache) {
        bytes = ByteBuffer(bytes: encoded.bytes)
        format = encoded.format
        etag = encoded.digest
        self.storagePermission = storagePermission
        quality = encoded.quality
    }
}

/// The `/img` endpoint apart from HTTP: admission, parameters, signature and the address policy. The rest is the
/// library's pipeline: ``Osprey/ImageManager/encodedImage(for:as:)`` finds the encoded result in memory or on disk,
/// or loads the source (one origin fetch and one decode for every variant of it asked at once), processes and
/// encodes it on the manager's threads, and keeps the bytes. ``Application`` turns what it returns into responses.
final class ImageProxy: Sendable {
    /// What a request gets.
    enum Outcome: Sendable {
        /// The image, whether the URL was signed, the request headers the response depends on (`Vary`: `Accept`, client
        /// hints), the URL's `exp`, and the `Content-Disposition` asked for, if any.
        case image(RenderedImage, signed: Bool, vary: [String], expires: Int?, disposition: String?)
        /// The fallback image, rendered for a source that could not be had, the status to send it with, and `Vary`.
        case fallback(RenderedImage, status: Int, vary: [String])
        /// A JSON document (`/info`, thumbor's `meta/`), whether the URL was signed, and its `exp`.
        case json([UInt8], signed: Bool, expires: Int?)
        case failure(ProxyError)
    }

    /// Which URL style a request came in: what its errors look like to its clients.
    enum URLStyle: Sendable {
        case img, imgproxy, thumbor
    }

    let configuration: ServerConfiguration
    let manager: ImageManager
    let metrics: ProxyMetrics
    /// What decodes may take at once (``ServerConfiguration/maxMemory``).
    let memoryBudget: MemoryBudget
    let signer: URLSigner?
    /// ``ServerConfiguration/presets`` by name.
    let presets: [String: [(name: String, value: String)]]
    /// ``ServerConfiguration/localRoot``, resolved; `nil` when not set or not a directory.
    let localRoot: String?
    let policy: SourceAddressPolicy
    /// Queries already parsed, checked and keyed, by the raw query and whether WebP is accepted: a repeated URL (the
    /// hot path) skips the parsing and the signature check, whose outcome for the same bytes cannot differ.
    let knownQueries: MemoryCache<String, KnownQuery>
    /// `/info` documents by source and parameters: asked again, answered without a load.
    let infoAnswers: MemoryCache<String, [UInt8]>
    private let inFlight = Atomic<Int>(0)
    /// Where the server is in its life: ``Phase``'s raw values.
    private let phase = Atomic<UInt8>(Phase.starting.rawValue)

    /// Where the server is in its life, for readiness.
    enum Phase: UInt8 {
        /// Not listening yet.
        case starting
        /// Listening and taking requests.
        case serving
        /// Stopping: requests in flight finish, no new ones should come.
        case draining
    }

    /// Whether a load balancer should send requests here (`GET /ready`), and if not, why.
    enum Readiness: String, Sendable {
        case ready
        /// Not listening yet.
        case starting
        /// Shutting down after SIGTERM or SIGINT.
        case draining
        /// Admission is full: as many requests in flight as ``ServerConfiguration/maxInFlight``, or as many renders
        /// waiting for memory as ``ServerConfiguration/maxMemoryWaiting``; a new one would be answered 503.
        case saturated
    }

    init(configuration: ServerConfiguration, metrics: ProxyMetrics, logger: Logger) {
        self.configuration = configuration
        self.metrics = metrics
        let memory = MemoryShares(configuration: configuration)
        memoryBudget =
            configuration.memoryBudget
            ?? MemoryBudget(
                bytes: memory.decoding, maxWaiting: configuration.maxMemoryWaiting,
                maxWait: configuration.processingTimeout)
        signer = URLSigner(secrets: configuration.secrets)
        presets = RenderParameters.presetTable(configuration.presets)
        localRoot = configuration.localRoot.flatMap(LocalSource.resolved)
        if let root = configuration.localRoot, localRoot == nil {
            logger.error("the local root does not exist: local sources are refused", metadata: ["root": "\(root)"])
        }
        policy = SourceAddressPolicy(configuration: configuration)

        // The namespace `osprey fetch` and `osprey prefetch` use: a cache they filled in the same directory serves
        // the proxy, except what they kept as private.
        var caching = ImageCache.Configuration()
        caching.disk.baseDirectory = configuration.cacheDirectory
        caching.disk.sizeLimit = configuration.diskCacheLimit
        caching.disk.isShared = true
        // No answer waits for its store, and decoded sources stay in memory: large files skip the page cache's copy.
        caching.disk.writesAroundPageCache = true
        // Memory keeps the encoded results and the decoded sources their variants are made from; final images are
        // encoded, not kept.
        caching.memory.costLimit = memory.sources
        caching.decodedSourceCostLimit = memory.sources
        caching.encodedCostLimit = memory.results
        var downloading = ImageDownloader.Configuration.proxy
        downloading.maximumBodySize = configuration.maxSourceBytes
        downloading.deadline = configuration.sourceTimeout
        downloading.clock = configuration.clock
        downloading.timeout = min(configuration.sourceTimeout, .seconds(10))
        downloading.maxConcurrentDownloads = max(64, configuration.maxInFlight)
        downloading.addressResolver = policy
        downloading.certificateAuthorities = configuration.certificateAuthorities
        downloading.httpVersion = configuration.httpVersion
        downloading.connectionsPerHost = configuration.connectionsPerOrigin
        downloading.proxies = configuration.proxies
        downloading.metricsFactory = PrometheusMetricsFactory(registry: metrics.registry)
        downloading.logger = logger
        downloading.tracer = configuration.tracer
        var managing = ImageManager.Configuration()
        // The declared size is checked before decoding, at whatever scale a thumbnail would be decoded; the decoded
        // size can never exceed it.
        managing.decoding.limits.maxSourcePixelCount = configuration.maxSourcePixels
        managing.decoding.limits.maxPixelCount = configuration.maxSourcePixels
        managing.decoding.limits.maxFrameCount = configuration.maxFrames
        managing.decoding.coders = configuration.coders
        managing.logger = logger
        managing.tracer = configuration.tracer
        managing.memoryBudget = memoryBudget
        managing.stageObserver = configuration.stageObserver
        // Rendered results are kept on disk beside their sources.
        managing.storesProcessedImagesOnDisk = true
        // Its caches serve every client: a `private` source is kept in none of them, like a `no-store` one.
        managing.isSharedCache = true
        manager = ImageManager(
            cache: ImageCache(configuration: caching, dataCache: configuration.dataCache),
            downloader: ImageDownloader(configuration: downloading),
            configuration: managing)

        var known = MemoryCache<String, KnownQuery>.Configuration()
        known.countLimit = 100_000
        known.costLimit = memory.queries
        knownQueries = MemoryCache(configuration: known)
        var answers = MemoryCache<String, [UInt8]>.Configuration()
        answers.countLimit = 100_000
        answers.costLimit = memory.queries / 4
        infoAnswers = MemoryCache(configuration: answers)
    }

    /// Stops fetching: cancels what is under way and shuts the downloader down.
    func shutdown() async {
        await manager.shutdown()
        if let downloader = manager.loader as? ImageDownloader { try? await downloader.shutdown() }
    }

    // MARK: Admission

    /// Counts a request in, or refuses it when ``ServerConfiguration/maxInFlight`` are already in.
    func admit() -> Bool {
        let count = inFlight.wrappingAdd(1, ordering: .relaxed).newValue
        guard count <= configuration.maxInFlight else {
            inFlight.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        metrics.inFlight.set(Double(count))
        return true
    }

    /// Counts a request out.
    func release() {
        let count = inFlight.wrappingSubtract(1, ordering: .relaxed).newValue
        metrics.inFlight.set(Double(count))
    }

    var requestsInFlight: Int { inFlight.load(ordering: .relaxed) }

    // MARK: Readiness

    /// Records that the server listens.
    func markServing() {
        _ = phase.compareExchange(
            expected: Phase.starting.rawValue, desired: Phase.serving.rawValue, ordering: .relaxed)
    }

    /// Records that the server is shutting down: readiness says so from now on.
    func beginDraining() {
        phase.store(Phase.draining.rawValue, ordering: .relaxed)
    }

    /// Whether a new request would be taken now.
    var readiness: Readiness {
        switch Phase(rawValue: phase.load(ordering: .relaxed)) ?? .starting {
        case .starting: return .starting
        case .draining: return .draining
        case .serving:
            let waiting = memoryBudget.usage.waiting
            if requestsInFlight >= configuration.maxInFlight || waiting >= memoryBudget.maxWaiting { return .saturated }
            return .ready
        }
    }

    // MARK: The pipeline

    // MARK: Formats

    /// The first of `formats` whose media type `accept` names explicitly with a q above 0 (`*/*` or `image/*` alone
    /// name none of them, as browsers that cannot decode WebP or AVIF send them too); `nil` when it names none.
    static func autoFormat(for accept: String?, preferring formats: [ImageFormat]) -> ImageFormat? {
        acceptedFormats(for: accept, preferring: formats).first
    }

    /// Every one of `formats` that `accept` names explicitly with a q above 0, in the order of `formats`: `format=auto`
    /// takes the first, `format=best` tries them all.
    static func acceptedFormats(for accept: String?, preferring formats: [ImageFormat]) -> [ImageFormat] {
        guard let accept, !formats.isEmpty else { return [] }
        var named: Set<String> = []
        for item in accept.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingWhitespace().lowercased() }
            guard let type = parts.first, type.hasPrefix("image/"), !type.hasSuffix("/*") else { continue }
            let refused = parts.dropFirst().contains {
                let parameter = $0.replacing(" ", with: "")
                return parameter.hasPrefix("q=") && (DecimalText.number(parameter.dropFirst(2)) ?? 1) <= 0
            }
            if !refused { named.insert(type) }
        }
        return formats.filter { named.contains($0.mimeType) }
    }

    /// `accepted` as a part of a remembered query's key: the answer may depend on every format the client takes.
    static func formatsKey(_ accepted: [ImageFormat]) -> String {
        accepted.isEmpty ? "-" : accepted.map(\.name).joined(separator: ",")
    }
}

/// How ``ServerConfiguration/maxMemory`` is shared: the in-memory caches (decoded sources, rendered results, checked
/// queries) take at most a quarter of it, in the proportions their limits give, and decoding and processing reserve
/// the rest — so that the process as a whole stays near the figure an operator gives. A budget the configuration
/// brings (``ServerConfiguration/memoryBudget``) is the application's: the caches keep their own limits then.
struct MemoryShares {
    var decoding: Int
    var sources: Int
    var results: Int
    var queries: Int

    init(configuration: ServerConfiguration) {
        // Decoded sources are large and the rendered results are what gets asked again: a small share for sources.
        sources = min(configuration.resultMemoryLimit / 2, 128 << 20)
        results = configuration.resultMemoryLimit
        queries = 64 << 20
        let total = configuration.maxMemory ?? MemoryBudget.defaultCapacity
        decoding = total
        guard configuration.memoryBudget == nil else { return }
        let wanted = sources + results + queries
        let allowed = min(wanted, total / 4)
        if allowed < wanted {
            let scale = Double(allowed) / Double(wanted)
            sources = Int(Double(sources) * scale)
            results = Int(Double(results) * scale)
            queries = Int(Double(queries) * scale)
        }
        decoding = total - allowed
    }
}

/// What a checked query resolved to.
struct KnownQuery: Sendable {
    let key: String
    let signed: Bool
    /// The request headers the answer depends on (`Vary`).
    let vary: [String]
    /// The URL's `exp`, checked again at every hit.
    let expires: Int?
    /// The `Content-Disposition` it asked for.
    let disposition: String?
}

/// The output pixel limit, checked on the final image before it is encoded.
struct OutputPixelLimit: ImageProcessing {
    static let name = "outputlimit"
    let maxPixels: Int

    var identifier: String { "\(Self.name)(\(maxPixels))" }
    /// It only checks.
    var keepsPixels: Bool { true }

    func process(_ image: Image) throws -> Image {
        guard image.width * image.height <= maxPixels else {
            throw Exceeded(
                description: "the output would be \(image.width)×\(image.height), over the limit; ask for 'w' or 'h'")
        }
        return image
    }

    struct Exceeded: Error, CustomStringConvertible {
        let description: String
    }
}

/// `frame=N`: frame `index` of an animation as a still image.
struct SelectFrame: ImageProcessing {
    static let name = "frame"
    let index: Int

    var identifier: String { "\(Self.name)(\(index))" }

    func process(_ image: Image) throws -> Image {
        guard index < image.frames.count else {
            throw FrameOutOfRange(description: "'frame' is \(index), the image has \(image.frames.count)")
        }
        var still = try Image(
            frames: [ImageFrame(pixels: image.frames[index].pixels)], loopCount: 0,
            orientation: image.orientation, sourceFormat: image.sourceFormat)
        still.colorProfile = image.colorProfile
        still.metadata = image.metadata
        return still
    }

    struct FrameOutOfRange: Error, CustomStringConvertible {
        let description: String
    }
}
