import Crypto
import Foundation
import Logging
import NIOCore
import Osprey
import OspreyCodecs
import Prometheus
import Synchronization

/// An image rendered for a request: its encoded bytes, its format and its ETag. Kept in memory and on disk.
struct RenderedImage: Sendable {
    let bytes: ByteBuffer
    let format: ImageFormat
    /// A strong validator: a hash of the bytes, which depend on nothing but the source's bytes and the parameters,
    /// so it changes exactly when one of them changes the output.
    let etag: String
    /// What the source's origin lets caches keep: a render of a `private` or `no-store` source is kept in none of the
    /// proxy's caches, and its response tells the caches in front.
    let storagePermission: StoragePermission

    init(bytes: [UInt8], format: ImageFormat, storagePermission: StoragePermission = .anyCache) {
        self.bytes = ByteBuffer(bytes: bytes)
        self.storagePermission = storagePermission
        self.format = format
        let digest = SHA256.hash(data: bytes)
        etag = "\"" + digest.prefix(16).map { byte in String(byte, radix: 16).leftPadded(to: 2) }.joined() + "\""
    }
}

/// The `/img` pipeline, apart from HTTP: admission, parameters, signature, host check, the result caches, and the
/// render through ``Osprey/ImageManager`` (one origin fetch for concurrent requests of a source, the failed-URL list,
/// the source caches). ``Application`` turns what it returns into responses.
final class ImageProxy: Sendable {
    /// What a request gets.
    enum Outcome: Sendable {
        case image(RenderedImage, signed: Bool, variesByAccept: Bool)
        case failure(ProxyError)
    }

    let configuration: ServerConfiguration
    let manager: ImageManager
    let metrics: ProxyMetrics
    /// What decodes may take at once (``ServerConfiguration/maxMemory``).
    let memoryBudget: MemoryBudget
    private let signer: URLSigner?
    private let policy: SourceAddressPolicy
    private let memoryResults: MemoryCache<String, RenderedImage>
    /// Queries already parsed, checked and keyed, by the raw query and whether WebP is accepted: a repeated URL (the
    /// hot path) skips the parsing and the signature check, whose outcome for the same bytes cannot differ.
    private let knownQueries: MemoryCache<String, KnownQuery>
    let diskResults: DiskCache
    private let inFlight = Atomic<Int>(0)
    /// Renders under way by result key, shared by every request for the same result.
    private let renders = Mutex<[String: Task<Result<RenderedImage, ProxyError>, Never>]>([:])

    init(configuration: ServerConfiguration, metrics: ProxyMetrics, logger: Logger) {
        self.configuration = configuration
        self.metrics = metrics
        let memory = MemoryShares(configuration: configuration)
        memoryBudget =
            configuration.memoryBudget
            ?? MemoryBudget(
                bytes: memory.decoding, maxWaiting: configuration.maxMemoryWaiting,
                maxWait: configuration.processingTimeout)
        signer = configuration.secret.map { URLSigner(secret: $0) }
        policy = SourceAddressPolicy(configuration: configuration)

        var sources = ImageCache.Configuration(namespace: "proxy-sources")
        sources.disk.baseDirectory = configuration.cacheDirectory
        sources.disk.sizeLimit = configuration.diskCacheLimit
        sources.memory.costLimit = memory.sources
        var downloading = ImageDownloader.Configuration.proxy
        downloading.maximumBodySize = configuration.maxSourceBytes
        downloading.deadline = configuration.sourceTimeout
        downloading.clock = configuration.clock
        downloading.timeout = min(configuration.sourceTimeout, .seconds(10))
        downloading.maxConcurrentDownloads = max(64, configuration.maxInFlight)
        downloading.addressResolver = policy
        downloading.metricsFactory = PrometheusMetricsFactory(registry: metrics.registry)
        downloading.logger = logger
        var managing = ImageManager.Configuration()
        // The declared size is checked before decoding, at whatever scale a thumbnail would be decoded; the decoded
        // size can never exceed it.
        managing.decoding.limits.maxSourcePixelCount = configuration.maxSourcePixels
        managing.decoding.limits.maxPixelCount = configuration.maxSourcePixels
        managing.decoding.limits.maxFrameCount = configuration.maxFrames
        managing.decoding.coders = configuration.coders
        managing.logger = logger
        managing.memoryBudget = memoryBudget
        // Its caches serve every client: a `private` source is kept in none of them, like a `no-store` one.
        managing.isSharedCache = true
        manager = ImageManager(
            cache: ImageCache(configuration: sources), downloader: ImageDownloader(configuration: downloading),
            configuration: managing)

        var known = MemoryCache<String, KnownQuery>.Configuration()
        known.countLimit = 100_000
        known.costLimit = memory.queries
        knownQueries = MemoryCache(configuration: known)
        var results = MemoryCache<String, RenderedImage>.Configuration()
        results.costLimit = memory.results
        memoryResults = MemoryCache(configuration: results)
        var disk = DiskCache.Configuration()
        disk.namespace = "proxy-results"
        disk.baseDirectory = configuration.cacheDirectory
        disk.sizeLimit = configuration.diskCacheLimit
        diskResults = DiskCache(configuration: disk, logger: logger)
    }

    /// Stops fetching: cancels what is under way and shuts the downloader down.
    func shutdown() async {
        manager.cancelAll()
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

    /// How many rendered results are in memory, and their bytes.
    var memoryResultCount: Int { memoryResults.count }
    var memoryResultBytes: Int { memoryResults.totalCost }

    // MARK: The pipeline

    /// Answers the `/img` query `query` for a client that sent `accept`.
    func render(query: String?, path: String, accept: String?, logger: Logger) async -> Outcome {
        let acceptsWebP = Self.acceptsWebP(accept)
        let queryKey = (acceptsWebP ? "w:" : "-:") + path + "?" + (query ?? "")
        if let known = knownQueries.value(forKey: queryKey), let hit = memoryResults.value(forKey: known.key) {
            metrics.hit(.resultMemory)
            return .image(hit, signed: known.signed, variesByAccept: known.variesByAccept)
        }
        let parameters: RenderParameters
        do {
            parameters = try RenderParameters(
                query: query, maxOutputPixels: configuration.maxOutputPixels, coders: configuration.coders)
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
        guard let host = parameters.source.host(percentEncoded: false), policy.allowsHost(host) else {
            return .failure(.forbiddenSource)
        }

        var resolved = parameters
        let variesByAccept = parameters.format == .auto
        if variesByAccept {
            // Resolved now for the key; the source's own format is the fallback once it is known.
            resolved.format = acceptsWebP ? .encoded(.webp) : .auto
        }
        let key = manager.cacheKey(for: parameters.source) + "#" + resolved.canonical
        let signed = parameters.signature != nil
        knownQueries.setValue(
            KnownQuery(key: key, signed: signed, variesByAccept: variesByAccept), forKey: queryKey,
            cost: queryKey.utf8.count + key.utf8.count)
        if let hit = memoryResults.value(forKey: key) {
            metrics.hit(.resultMemory)
            return .image(hit, signed: signed, variesByAccept: variesByAccept)
        }
        switch await sharedRender(of: resolved, key: key, logger: logger) {
        case .success(let image): return .image(image, signed: signed, variesByAccept: variesByAccept)
        case .failure(let error): return .failure(error)
        }
    }

    /// The render of `key`, joined when one is under way, else started; it runs to its end (and is cached) even
    /// when every request waiting for it has gone.
    private func sharedRender(
        of parameters: RenderParameters, key: String, logger: Logger
    ) async -> Result<RenderedImage, ProxyError> {
        let task = renders.withLock { renders in
            if let running = renders[key] { return running }
            let task = Task {
                let result = await self.loadOrRender(parameters, key: key, logger: logger)
                _ = self.renders.withLock { $0.removeValue(forKey: key) }
                return result
            }
            renders[key] = task
            return task
        }
        return await task.value
    }

    private func loadOrRender(
        _ parameters: RenderParameters, key: String, logger: Logger
    ) async -> Result<RenderedImage, ProxyError> {
        if let bytes = await diskResults.data(forKey: key) {
            let image = RenderedImage(bytes: bytes, format: configuration.coders.format(of: bytes))
            if image.format != .unknown {
                metrics.hit(.resultDisk)
                memoryResults.setValue(image, forKey: key, cost: bytes.count)
                return .success(image)
            }
        }
        let start = ContinuousClock.now
        let result = await renderNow(parameters, logger: logger)
        metrics.processing.record(ContinuousClock.now - start)
        let bytes: [UInt8]
        let permission: StoragePermission
        let rendered: ImageFormat
        switch result {
        case .success(let render):
            (bytes, permission, rendered) = (render.bytes, render.permission, render.format)
            metrics.hit(render.level)
        case .failure(let error):
            return .failure(error)
        }
        let image = RenderedImage(bytes: bytes, format: rendered, storagePermission: permission)
        guard permission == .anyCache else { return .success(image) }
        memoryResults.setValue(image, forKey: key, cost: bytes.count)
        Task {
            do {
                try await diskResults.store(bytes, forKey: key)
            } catch {
                logger.warning("cannot store a rendered image on disk", metadata: ["error": "\(error)"])
            }
        }
        return .success(image)
    }

    /// Loads the source through the manager (within the time limits), processes and encodes it.
    private func renderNow(
        _ parameters: RenderParameters, logger: Logger
    ) async -> Result<
        (bytes: [UInt8], format: ImageFormat, level: ProxyMetrics.Level, permission: StoragePermission), ProxyError
    > {
        var processors = parameters.processors
        if let frame = parameters.frame { processors.insert(SelectFrame(index: frame), at: 0) }
        var request: ImageRequest
        do throws(OspreyError) {
            request = try ImageRequest(url: parameters.source, processors: processors)
        } catch {
            guard case .invalidURL(_, let reason) = error else { return .failure(.internalError) }
            return .failure(RenderParameters.invalidSource(reason))
        }
        // A still output needs one frame only.
        if parameters.frame == nil, parameters.format == .encoded(.jpeg) || parameters.format == .encoded(.png) {
            request.options.insert(.decodeFirstFrameOnly)
        }
        let loaded: ImageResult
        switch await load(request) {
        case .success(let result): loaded = result
        case .failure(.overtime):
            return .failure(.unavailable("the image took longer than the processing limit", retryAfter: nil))
        case .failure(.image(.processingFailed(let identifier, let reason)))
        where identifier.hasPrefix(SelectFrame.name):
            return .failure(.badRequest(reason))
        case .failure(.image(let error)):
            logger.info("cannot render", metadata: ["url": "\(parameters.source)", "error": "\(error)"])
            return .failure(ProxyError(error, limits: configuration))
        }
        let image = loaded.image
        guard image.width * image.height <= configuration.maxOutputPixels else {
            return .failure(
                .tooLarge("the output would be \(image.width)×\(image.height), over the limit; ask for 'w' or 'h'"))
        }
        let format = Self.outputFormat(parameters.format, for: image, coders: configuration.coders)
        var encoding = EncodingOptions()
        encoding.coders = configuration.coders
        encoding.quality = parameters.quality ?? RenderParameters.defaultQuality
        encoding.metadata = parameters.metadata
        let bytes: [UInt8]
        do {
            bytes = try ImageEncoder.encode(image, as: format, options: encoding)
        } catch {
            logger.error("cannot encode", metadata: ["format": "\(format)", "error": "\(error)"])
            return .failure(.internalError)
        }
        let level: ProxyMetrics.Level =
            switch loaded.cacheType {
            case .memory: .sourceMemory
            case .disk: .sourceDisk
            case .none: .origin
            }
        return .success((bytes, format, level, loaded.storagePermission))
    }

    /// The manager's load, abandoned (503) when the source and processing time limits have both passed.
    private func load(_ request: ImageRequest) async -> Result<ImageResult, LoadFailure> {
        let limit = configuration.sourceTimeout + configuration.processingTimeout
        return await withDeadline(limit, clock: configuration.clock, overtime: .failure(.overtime)) {
            do throws(ImageError) {
                return .success(try await self.manager.image(for: request))
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

    /// Whether an `Accept` header names WebP (explicitly: `*/*` alone does not, as with browsers that cannot).
    static func acceptsWebP(_ accept: String?) -> Bool {
        guard let accept else { return false }
        for item in accept.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard parts.first == "image/webp" else { continue }
            let refused = parts.dropFirst().contains { $0.replacingOccurrences(of: " ", with: "") == "q=0" }
            return !refused
        }
        return false
    }

    /// The format written for `requested` (`nil`: the source's when an encoder of `coders` writes it; `.auto` here:
    /// WebP was not accepted).
    static func outputFormat(
        _ requested: RenderParameters.OutputFormat?, for image: Image, coders: ImageCoderRegistry
    ) -> ImageFormat {
        let fallback: ImageFormat = image.pixelFormat.hasAlpha ? .png : .jpeg
        switch requested {
        case .encoded(let format):
            return format
        case .auto:
            // No WebP: the source's format when the client surely takes it, else the common one that fits.
            switch image.sourceFormat {
            case .jpeg, .png, .gif: return image.sourceFormat
            default: return image.isAnimated ? .gif : fallback
            }
        case nil:
            let source = image.sourceFormat
            return source != .unknown && coders.encoder(for: source) != nil ? source : fallback
        }
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
