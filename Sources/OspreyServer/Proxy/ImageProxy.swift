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

    init(_ encoded: EncodedImage, storagePermission: StoragePermission = .anyCache) {
        bytes = ByteBuffer(bytes: encoded.bytes)
        format = encoded.format
        etag = encoded.digest
        self.storagePermission = storagePermission
    }
}

/// The `/img` endpoint apart from HTTP: admission, parameters, signature and the address policy. The rest is the
/// library's pipeline: ``Osprey/ImageManager/encodedImage(for:as:)`` finds the encoded result in memory or on disk,
/// or loads the source (one origin fetch and one decode for every variant of it asked at once), processes and
/// encodes it on the manager's threads, and keeps the bytes. ``Application`` turns what it returns into responses.
final class ImageProxy: Sendable {
    /// What a request gets.
    enum Outcome: Sendable {
        /// The image, whether the URL was signed, whether the response depends on `Accept`, and the URL's `exp`.
        case image(RenderedImage, signed: Bool, variesByAccept: Bool, expires: Int?)
        /// The fallback image, rendered for a source that could not be had, and the status to send it with.
        case fallback(RenderedImage, status: Int, variesByAccept: Bool)
        case failure(ProxyError)
    }

    let configuration: ServerConfiguration
    let manager: ImageManager
    let metrics: ProxyMetrics
    /// What decodes may take at once (``ServerConfiguration/maxMemory``).
    let memoryBudget: MemoryBudget
    private let signer: URLSigner?
    /// ``ServerConfiguration/presets`` by name.
    private let presets: [String: [(name: String, value: String)]]
    /// ``ServerConfiguration/localRoot``, resolved; `nil` when not set or not a directory.
    private let localRoot: String?
    private let policy: SourceAddressPolicy
    /// Queries already parsed, checked and keyed, by the raw query and whether WebP is accepted: a repeated URL (the
    /// hot path) skips the parsing and the signature check, whose outcome for the same bytes cannot differ.
    private let knownQueries: MemoryCache<String, KnownQuery>
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
        // Rendered results are kept on disk beside their sources.
        managing.storesProcessedImagesOnDisk = true
        // Its caches serve every client: a `private` source is kept in none of them, like a `no-store` one.
        managing.isSharedCache = true
        manager = ImageManager(
            cache: ImageCache(configuration: caching), downloader: ImageDownloader(configuration: downloading),
            configuration: managing)

        var known = MemoryCache<String, KnownQuery>.Configuration()
        known.countLimit = 100_000
        known.costLimit = memory.queries
        knownQueries = MemoryCache(configuration: known)
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

    /// The bytes a query answered before rendered to, when memory still has them; in a span of its own when tracing.
    private func encodedInMemory(_ known: KnownQuery) -> EncodedImage? {
        guard let tracer = manager.tracer else { return manager.cache.encodedImage(forKey: known.key) }
        let span = tracer.startSpan("osprey.cache.lookup")
        defer { span.end() }
        let hit = manager.cache.encodedImage(forKey: known.key)
        span.attributes["osprey.cache.result"] = hit == nil ? "miss" : "memory"
        return hit
    }

    /// Answers the `/img` query `query` for a client that sent `accept`.
    func render(query: String?, path: String, accept: String?, logger: Logger) async -> Outcome {
        let autoFormat = Self.autoFormat(for: accept, preferring: configuration.autoFormats)
        let queryKey = (autoFormat?.name ?? "-") + ":" + path + "?" + (query ?? "")
        if let known = knownQueries.value(forKey: queryKey), let hit = encodedInMemory(known) {
            if let expires = known.expires, hasPassed(expires) { return .failure(.expired) }
            metrics.hit(.resultMemory)
            return .image(
                RenderedImage(hit), signed: known.signed, variesByAccept: known.variesByAccept, expires: known.expires)
        }
        let parameters: RenderParameters
        do {
            parameters = try RenderParameters(
                query: query, maxOutputPixels: configuration.maxOutputPixels, coders: configuration.coders,
                presets: presets, presetsOnly: configuration.presetsOnly, allowsLocalSources: localRoot != nil,
                hasWatermark: configuration.watermark != nil)
        } catch {
            return .failure(error)
        }
        if let signature = parameters.signature {
            guard let signer, signer.isValid(signature, path: path, parameters: parameters.pairs) else {
                return .failure(.badSignature("the signature does not match"))
            }
        } else if !configuration.allowsUnsigned {
            return .failure(.badSignature("the request must be signed ('sig')"))
        }
        // After the signature: an expiry nobody signed proves nothing, and a forger learns nothing from it.
        if let expires = parameters.expires, hasPassed(expires) { return .failure(.expired) }
        var local: LocalSource?
        if let path = parameters.localPath, let localRoot {
            switch LocalSource.resolve(path, in: localRoot, maximumSize: configuration.maxSourceBytes) {
            case .success(let source): local = source
            case .failure(let error): return await fallback(for: error, parameters, autoFormat: autoFormat)
            }
        } else {
            guard let host = parameters.source.host(percentEncoded: false), policy.allowsHost(host) else {
                return .failure(.forbiddenSource)
            }
        }
        let request: ImageRequest
        switch makeRequest(parameters, local: local) {
        case .success(let made): request = made
        case .failure(let error): return .failure(error)
        }
        let output = Self.output(parameters, autoFormat: autoFormat, coders: configuration.coders)
        let key = manager.cacheKey(for: request, as: output)
        let signed = parameters.signature != nil
        let variesByAccept = parameters.format == .auto
        // A local file may be edited under the same URL (a new key each time): its queries are resolved every time.
        if local == nil {
            knownQueries.setValue(
                KnownQuery(key: key, signed: signed, variesByAccept: variesByAccept, expires: parameters.expires),
                forKey: queryKey, cost: queryKey.utf8.count + key.utf8.count)
        }

        let start = ContinuousClock.now
        let loaded: EncodedResult
        switch await load(request, as: output) {
        case .success(let result): loaded = result
        case .failure(.overtime):
            return .failure(.unavailable("the image took longer than the processing limit", retryAfter: nil))
        case .failure(.image(.processingFailed(let identifier, let error)))
        where identifier.hasPrefix(SelectFrame.name):
            return .failure(.badRequest("\(error)"))
        case .failure(.image(.processingFailed(let identifier, let error)))
        where identifier.hasPrefix(OutputPixelLimit.name):
            return .failure(.tooLarge("\(error)"))
        case .failure(.image(let error)):
            logger.info("cannot render", metadata: ["url": "\(parameters.source)", "error": "\(error)"])
            return await fallback(for: ProxyError(error, limits: configuration), parameters, autoFormat: autoFormat)
        }
        switch (loaded.cacheType, loaded.imageCacheType) {
        case (.memory, _): metrics.hit(.resultMemory)
        case (.disk, _): metrics.hit(.resultDisk)
        case (.notCached, .memory?): metrics.hit(.sourceMemory)
        case (.notCached, .disk?): metrics.hit(.sourceDisk)
        case (.notCached, _): metrics.hit(.origin)
        }
        if loaded.cacheType == .notCached { metrics.processing.record(ContinuousClock.now - start) }
        return .image(
            RenderedImage(loaded.encoded, storagePermission: loaded.storagePermission), signed: signed,
            variesByAccept: variesByAccept, expires: parameters.expires)
    }

    /// The fallback image rendered as `parameters` ask, when `error` says the source could not be had and there is
    /// one (``ServerConfiguration/fallbackImage``); otherwise, or when the fallback itself fails, `error`.
    private func fallback(
        for error: ProxyError, _ parameters: RenderParameters, autoFormat: ImageFormat?
    ) async -> Outcome {
        guard let fallback = configuration.fallbackImage, error.isSourceFailure else { return .failure(error) }
        let bytes = fallback.bytes
        let request = ImageRequest(
            provider: ClosureDataProvider(cacheKey: fallback.cacheKey) { bytes }, options: [.decodeFirstFrameOnly],
            processors: processors(for: parameters))
        let output = Self.output(parameters, autoFormat: autoFormat, coders: configuration.coders)
        guard case .success(let loaded) = await load(request, as: output) else { return .failure(error) }
        metrics.fallbacks.increment()
        return .fallback(
            RenderedImage(loaded.encoded), status: fallback.status, variesByAccept: parameters.format == .auto)
    }

    /// What `parameters` ask of an image, with the server's watermark, and the output pixel limit last.
    private func processors(for parameters: RenderParameters) -> [any ImageProcessing] {
        parameters.processors(watermark: configuration.watermark)
            + [OutputPixelLimit(maxPixels: configuration.maxOutputPixels)]
    }

    /// Whether the Unix time `expires` has come, on the configuration's wall clock.
    private func hasPassed(_ expires: Int) -> Bool {
        configuration.now().seconds >= Double(expires)
    }

    /// How long a response may be cached: ``ServerConfiguration/cacheMaxAge``, or less when the URL expires sooner,
    /// so that no cache in front serves it past its `exp`.
    func maxAge(expires: Int?) -> Int {
        guard let expires else { return configuration.cacheMaxAge }
        let left = Double(expires) - configuration.now().seconds
        return max(0, min(configuration.cacheMaxAge, Int(saturating: left.rounded(.down))))
    }

    /// The manager's request for `parameters` (read from `local` for a local source): the source, the frame and the
    /// processors, the output pixel limit last; one frame only for a still output. A render runs to its end (and is
    /// cached) even when every request waiting for it has gone.
    private func makeRequest(_ parameters: RenderParameters, local: LocalSource?) -> Result<ImageRequest, ProxyError> {
        var processors = processors(for: parameters)
        if let frame = parameters.frame { processors.insert(SelectFrame(index: frame), at: 0) }
        var request: ImageRequest
        if let local {
            request = ImageRequest(provider: local, options: [.detached], processors: processors)
        } else {
            do throws(ImageError) {
                request = try ImageRequest(url: parameters.source, options: [.detached], processors: processors)
            } catch {
                guard case .invalidURL(_, let reason) = error else { return .failure(.internalError) }
                return .failure(RenderParameters.invalidSource(reason))
            }
        }
        if case .some(let hint) = parameters.decodingHint { request.decodingSizeHint = hint }
        if parameters.frame == nil, parameters.format == .encoded(.jpeg) || parameters.format == .encoded(.png) {
            request.options.insert(.decodeFirstFrameOnly)
        }
        return .success(request)
    }

    /// What the result is encoded as: the format asked for (with `auto` resolved to `autoFormat`, the preferred
    /// format the client accepts, when there is one), quality and metadata.
    static func output(
        _ parameters: RenderParameters, autoFormat: ImageFormat?, coders: ImageCoderRegistry
    ) -> ImageOutput {
        var options = EncodingOptions()
        options.coders = coders
        options.quality = parameters.quality ?? RenderParameters.defaultQuality
        options.metadata = parameters.metadata
        if let background = parameters.background {
            // What transparency is flattened onto in a format without alpha (JPEG), as well as the canvas colour.
            options.background = EncodingOptions.Color(
                red: background.red, green: background.green, blue: background.blue)
        }
        let format: ImageOutput.Format =
            switch parameters.format {
            case .encoded(let format): .format(format)
            case .auto where autoFormat != nil: .format(autoFormat!)
            // None of the preferred formats: the source's format when the client surely takes it, else the common
            // one that fits.
            case .auto: .source(accepted: [.jpeg, .png, .gif])
            case nil: .source()
            }
        return ImageOutput(format, options: options)
    }

    /// The manager's encoded load, abandoned (503) when the source and processing time limits have both passed.
    private func load(_ request: ImageRequest, as output: ImageOutput) async -> Result<EncodedResult, LoadFailure> {
        let limit = configuration.sourceTimeout + configuration.processingTimeout
        return await withDeadline(limit, clock: configuration.clock, overtime: .failure(.overtime)) {
            do throws(ImageError) {
                return .success(try await self.manager.encodedImage(for: request, as: output))
            } catch {
                return .failure(.image(error))
            }
        }
    }

    private enum LoadFailure: Error {
        case image(ImageError)
        case overtime
    }

    // MARK: Formats

    /// The first of `formats` whose media type `accept` names explicitly with a q above 0 (`*/*` or `image/*` alone
    /// name none of them, as browsers that cannot decode WebP or AVIF send them too); `nil` when it names none.
    static func autoFormat(for accept: String?, preferring formats: [ImageFormat]) -> ImageFormat? {
        guard let accept, !formats.isEmpty else { return nil }
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
        return formats.first { named.contains($0.mimeType) }
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
    let variesByAccept: Bool
    /// The URL's `exp`, checked again at every hit.
    let expires: Int?
}

/// The output pixel limit, checked on the final image before it is encoded.
struct OutputPixelLimit: ImageProcessing {
    static let name = "outputlimit"
    let maxPixels: Int

    var identifier: String { "\(Self.name)(\(maxPixels))" }

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
