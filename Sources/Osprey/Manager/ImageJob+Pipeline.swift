import FoundationEssentials
import Logging
import OspreyCodecs

// The stages of a job, in the load flow's order: disk (memory was tried by the caller), download, decode, transform and
// process, store. Each blocking stage runs on the manager's decoding or processing threads; between stages the job
// stops if every subscriber has left (its task is cancelled).
extension ImageJob {
    typealias Outcome = Result<ImageResult, ImageError>
    typealias Store = @Sendable () async -> DiskStoreOutcome

    /// A cache hit, with what revalidating it needs.
    struct Cached: Sendable {
        var result: ImageResult
        /// The original bytes on disk, to tell an unchanged image from a new one.
        var originalBytes: [UInt8]?
        /// The stored validators, for a conditional request.
        var validators: HTTPValidators?
    }

    /// Runs the stages; returns the outcome and, when nobody waits for it, the disk store still to do.
    func load() async -> (Outcome, Store?) {
        let options = request.options
        let url = request.url
        var cached: Cached?
        if options.looksOnDisk {
            await observe(.disk)
            let found = await manager.tracing.withSpan("osprey.cache.lookup") { span in
                let found = span.record(await lookUp())
                if case .success(let hit) = found {
                    span.set("osprey.cache.result", hit.map { "\($0.result.cacheType)" } ?? "miss")
                }
                return found
            }
            switch found {
            case .success(let hit): cached = hit
            case .failure(let error): return (.failure(error), nil)
            }
            guard !Task.isCancelled else { return (.failure(.cancelled), nil) }
            if let cached {
                guard options.contains(.refreshCached) else { return (.success(cached.result), nil) }
                var early = cached.result
                early.isFinal = false
                send(.preview(early))
            }
        }
        if options.contains(.fromCacheOnly) {
            return (cached.map { .success($0.result) } ?? .failure(.notCached(url)), nil)
        }
        if let shouldDownload = manager.configuration.shouldDownload, !shouldDownload(url) {
            return (cached.map { .success($0.result) } ?? .failure(.downloadDeclined(url)), nil)
        }

        await observe(.download)
        guard !Task.isCancelled else { return (.failure(.cancelled), nil) }
        // Said before the download, so that the first of the source's jobs to decode decodes for all of them.
        let joinsDecode = sharesDecodes
        if joinsDecode {
            manager.sourceDecodes.join(sourceDecodeKey, job: ObjectIdentifier(self), decoder: decoder)
        }
        defer { if joinsDecode { manager.sourceDecodes.leave(sourceDecodeKey, job: ObjectIdentifier(self)) } }
        let response: DownloadResponse
        switch await download(validators: cached?.validators) {
        case .success(let downloaded): response = downloaded
        case .failure(let error): return (.failure(error), nil)
        }
        // What the origin lets be kept: a shared cache (a proxy's) keeps only what any cache may; a private one keeps
        // everything in memory and writes all but `no-store` to disk.
        let permission = response.storagePermission
        let isShared = manager.configuration.isSharedCache
        let keepsInMemory = !isShared || permission == .anyCache
        let keepsOnDisk = permission.allowsStoring(inSharedCache: isShared)
        if cached != nil {
            // A copy stored before the origin said otherwise must not outlive its word.
            if !keepsInMemory { await cache.removeImage(forKey: key.variantKey, fromDisk: false) }
            if !keepsOnDisk { await cache.dataCache.removeData(forKey: baseKey) }
            if response.body != cached?.originalBytes { cache.decodedSources.removeValue(forKey: baseKey) }
        }
        if let cached, response.isNotModified || cached.originalBytes == response.body {
            // The cached image is current; nothing new is delivered.
            return (.success(cached.result), nil)
        }
        if response.isNotModified {
            return (.failure(.downloadFailed(.httpStatus(code: 304, headers: response.headers))), nil)
        }

        let decoded: Image
        let transformed: Image?
        let final: Image
        // The source that answered: the URL, or one of its alternatives.
        let source = response.requestedURL
        switch await decodeAndProcess(response.body, from: source, keepsInMemory: keepsInMemory) {
        case .success(let images): (decoded, transformed, final) = images
        case .failure(let error): return (.failure(error), nil)
        }
        manager.failedURLs.remove(source)

        var result = ImageResult(
            image: final, data: transformed == nil ? response.body : nil, cacheType: .notCached, url: response.url,
            storagePermission: permission)
        let isOriginal = key.variantKey == baseKey
        if keepsInMemory, request.keepsVariant {
            cache.storeInMemory(
                final, data: isOriginal ? result.data : nil, forKey: key.variantKey,
                expiration: request.memoryCacheExpiration)
        }
        guard keepsOnDisk else {
            if !options.contains(.cacheMemoryOnly) { result.diskStore = .forbiddenByOrigin }
            return (.success(result), nil)
        }
        let store = diskStore(
            original: transformed ?? decoded, bytes: result.data, final: final, validators: response.validators)
        guard let store else { return (.success(result), nil) }
        if wantsStoreBeforeDelivery {
            result.diskStore = await store()
            guard !Task.isCancelled else { return (.failure(.cancelled), nil) }
            return (.success(result), nil)
        }
        return (.success(result), store)
    }

    // MARK: Stages

    /// Memory (bytes, when memory keeps bytes), then a stored variant, then the original on disk, decoded and
    /// processed within the memory budget; the result is put in memory. Under `refreshCached` it also reads the
    /// original bytes and validators. A miss is `nil`; bytes that do not decode are a miss too (the next source is
    /// tried); a budget that refuses the decode fails the load.
    private func lookUp() async -> Result<Cached?, ImageError> {
        let variantKey = key.variantKey
        if let image = cache.imageInMemory(forKey: variantKey) {
            return .success(
                await preparedForRevalidation(
                    Cached(result: ImageResult(image: image, data: nil, cacheType: .memory, url: request.url))))
        }
        if let derived = await derivedFromDecodedSource() {
            switch derived {
            case .success(let image):
                if request.keepsVariant {
                    cache.storeInMemory(image, data: nil, forKey: variantKey, expiration: request.memoryCacheExpiration)
                }
                return .success(
                    await preparedForRevalidation(
                        Cached(result: ImageResult(image: image, data: nil, cacheType: .memory, url: request.url))))
            case .failure(let error):
                return .failure(error)
            }
        }
        let readsVariant =
            manager.configuration.storesProcessedImagesOnDisk && variantKey != baseKey && request.keepsVariant
        // The original's bytes in memory (when memory keeps bytes) come first, then a stored variant, then the
        // original on disk; the cache's one lookup reads memory before the disk.
        var sources: [CachedSource] = cache.dataInMemory(forKey: baseKey) != nil ? [.original] : []
        if readsVariant { sources.append(.variant) }
        if sources.last != .original { sources.append(.original) }
        for source in sources {
            guard !Task.isCancelled else { return .success(nil) }
            let found: (image: Image, stored: ImageCache.StoredData, reservation: MemoryBudget.Reservation?)
            switch await decodeCached(source) {
            case .miss: continue
            case .failure(let error): return .failure(error)
            case .hit(let image, let stored, let reservation): found = (image, stored, reservation)
            }
            // The reservation covers the processors too: it goes once the final image is made.
            defer { found.reservation?.release() }
            var image = found.image
            let isVariant = source == .variant
            if !isVariant, sharesDecodes,
                let header = try? ImageHeader(reading: found.stored.bytes, coders: decoding.coders)
            {
                let size = decoder.size(for: header)
                cache.storeDecodedSource(
                    DecodedSource(image: image, header: header, size: size, options: decoding), forKey: baseKey,
                    expiration: request.memoryCacheExpiration)
            }
            if !isVariant, !request.processors.isEmpty {
                guard case .success(let processed) = await process(image) else { return .success(nil) }
                image = processed
            }
            let original = isVariant ? nil : found.stored.bytes
            let cacheType = found.stored.cacheType
            if request.keepsVariant {
                cache.storeInMemory(
                    image, data: variantKey == baseKey ? original : nil, forKey: variantKey,
                    expiration: request.memoryCacheExpiration)
            }
            return .success(
                await preparedForRevalidation(
                    Cached(
                        result: ImageResult(image: image, data: original, cacheType: cacheType, url: request.url),
                        originalBytes: original)))
        }
        return .success(nil)
    }

    /// The variant made from a source decoded earlier and kept in memory, when one is there at a size this job's
    /// decoder would not exceed: processed within the memory budget its processing needs. `nil` when there is none
    /// (or the processors fail on it: the next source is tried).
    private func derivedFromDecodedSource() async -> Result<Image, ImageError>? {
        guard sharesDecodes, let source = cache.decodedSource(forKey: baseKey),
            source.serves(decoder.size(for: source.header), options: decoding)
        else { return nil }
        var reservation: MemoryBudget.Reservation?
        if let budget = manager.configuration.memoryBudget {
            let image = source.image
            let estimate = DecodingEstimate(
                width: image.width, height: image.height, channels: image.pixelFormat.bytesPerPixel,
                frameCount: image.frames.count, imageBytes: 0, peakBytes: 0)
            let bytes = Self.processingBytes(after: estimate, processors: request.processors, transforms: false)
            do throws(MemoryBudget.Refusal) {
                reservation = try await budget.reserve(bytes)
            } catch .cancelled {
                return .failure(.cancelled)
            } catch {
                return .failure(.insufficientMemory(error))
            }
        }
        defer { reservation?.release() }
        guard case .success(let image) = await process(source.image) else { return nil }
        return .success(image)
    }

    /// What a cached image may be made from.
    private enum CachedSource: Equatable {
        /// The processed variant on disk (``ImageManager/Configuration/storesProcessedImagesOnDisk``).
        case variant
        /// The original's bytes, in memory or on disk.
        case original
    }

    private enum CachedDecode {
        /// Decoded, with the memory reserved for it and its processing (none without a budget).
        case hit(Image, ImageCache.StoredData, reservation: MemoryBudget.Reservation?)
        case miss
        case failure(ImageError)
    }

    /// The image of `source`, read (on the decoding threads) and decoded within the memory budget: at once when
    /// the budget has room, else after waiting for it off those threads, so a waiting decode never holds one. A hit
    /// keeps its reservation for the caller to release after processing.
    private func decodeCached(_ source: CachedSource) async -> CachedDecode {
        // A variant is stored processed: decoded plainly, with nothing to process after.
        let decoder = source == .variant ? JobDecoder(options: manager.configuration.decoding) : self.decoder
        let key = source == .variant ? self.key.variantKey : baseKey
        let budget = manager.configuration.memoryBudget
        let needed: @Sendable ([UInt8]) -> Int? = { [self] bytes in
            source == .variant ? decoder.estimate(bytes)?.peakBytes : memoryNeeded(for: bytes)
        }
        enum Attempt {
            case done(CachedDecode)
            case needsMemory(ImageCache.StoredData, Int)
        }
        let cache = self.cache
        let serializer = cache.configuration.serializer
        let attempt = await withTaskExecutorPreference(manager.decodingPool) { () -> Attempt in
            guard let stored = cache.blockingStoredData(forKey: key) else { return .done(.miss) }
            var reservation: MemoryBudget.Reservation?
            if let budget, let count = needed(stored.bytes) {
                guard let granted = budget.reserveIfFree(count) else { return .needsMemory(stored, count) }
                reservation = granted
            }
            manager.sourceDecodes.countDecode()
            guard let image = try? decoder.decodeStored(stored.bytes, serializer: serializer) else {
                reservation?.release()
                return .done(.miss)
            }
            return .done(.hit(image, stored, reservation: reservation))
        }
        switch attempt {
        case .done(let outcome):
            return outcome
        case .needsMemory(let stored, let count):
            guard let budget else { return .miss }
            let reservation: MemoryBudget.Reservation
            do throws(MemoryBudget.Refusal) {
                reservation = try await budget.reserve(count)
            } catch .cancelled {
                return .failure(.cancelled)
            } catch {
                return .failure(.insufficientMemory(error))
            }
            manager.sourceDecodes.countDecode()
            let image = await withTaskExecutorPreference(manager.decodingPool) {
                try? decoder.decodeStored(stored.bytes, serializer: serializer)
            }
            guard let image else {
                reservation.release()
                return .miss
            }
            return .hit(image, stored, reservation: reservation)
        }
    }

    /// Under `refreshCached`, `cached` with the original bytes (read from disk when the hit did not bring them) and
    /// the stored validators; otherwise `cached` as it is.
    private func preparedForRevalidation(_ cached: Cached) async -> Cached {
        guard request.options.contains(.refreshCached) else { return cached }
        var cached = cached
        let cache = self.cache
        let baseKey = self.baseKey
        if cached.originalBytes == nil {
            cached.originalBytes = await withTaskExecutorPreference(manager.decodingPool) {
                cache.blockingStoredData(forKey: baseKey)?.bytes
            }
        }
        cached.validators = await cache.dataCache.validators(forKey: baseKey)
        return cached
    }

    /// Downloads the URL (or the first of its alternatives that answers) at the subscribers' highest priority,
    /// conditionally when `validators` are given; records lasting failures.
    private func download(validators: HTTPValidators?) async -> Result<DownloadResponse, ImageError> {
        let decoder =
            request.options.contains(.progressiveDownload)
            ? IncrementalImageDecoder(options: decoding) : nil
        return await manager.downloadFirstSource(
            of: request, loader: loader, priority: priority, validators: validators,
            progress: { [weak self] progress in self?.received(progress, decoder: decoder) },
            started: { setDataTask($0) })
    }

    /// Decodes downloaded `bytes` and runs the transform hook and the processors, holding what the memory budget
    /// grants for it until the final image is made; returns the decoded image, the transformed one (`nil` when the
    /// hook left it alone) and the final one. A lasting failure (undecodable, larger than the whole budget) enters
    /// the failed-URL list for `source`, the URL the bytes came from.
    private func decodeAndProcess(
        _ bytes: [UInt8], from source: URL, keepsInMemory: Bool
    ) async -> Result<(decoded: Image, transformed: Image?, final: Image), ImageError> {
        await observe(.decode)
        guard !Task.isCancelled else { return .failure(.cancelled) }
        let reservation: MemoryBudget.Reservation?
        switch await reserveMemory(for: bytes) {
        case .success(let granted): reservation = granted
        case .failure(let error):
            manager.failedURLs.record(source, failure: error)
            return .failure(error)
        }
        defer { reservation?.release() }
        let decoded: Image
        let queued = await manager.tracing.withSpan("osprey.decode") { span in
            let queued = await manager.decodingQueue.run(for: request.url) {
                await decode(bytes, keepsInMemory: keepsInMemory)
            }
            switch queued {
            case .success(let image)?:
                span.set("osprey.image.width", image.width)
                span.set("osprey.image.height", image.height)
            case .failure(let error)?: span.fail(error)
            case nil: span.fail(ImageError.cancelled)
            }
            return queued
        }
        guard let queued else { return .failure(.cancelled) }
        switch queued {
        case .success(let image): decoded = image
        case .failure(let error):
            manager.failedURLs.record(source, failure: .decodingFailed(error))
            return .failure(.decodingFailed(error))
        }
        for warning in decoded.warnings {
            manager.configuration.logger.warning(
                "decoded with a warning", metadata: ["osprey.url": "\(request.url)", "osprey.warning": "\(warning)"])
        }

        await observe(.process)
        guard !Task.isCancelled else { return .failure(.cancelled) }
        return await transformAndProcess(decoded).map { (decoded, $0.0, $0.1) }
    }

    /// How the job decodes bytes (see ``ImageManager/decoder(for:)``).
    var decoder: JobDecoder { JobDecoder(options: decoding, request: request) }

    /// Whether the job shares its decode with the other variants of its source and uses a decoded source kept in
    /// memory: not when the transform hook runs, which makes the source that variants derive from another image.
    var sharesDecodes: Bool { manager.configuration.transformDownloadedImage == nil }

    /// What makes the job's decode shareable with another's.
    var sourceDecodeKey: SourceDecodes.Key {
        SourceDecodes.Key(
            baseKey: baseKey, pixelBudget: decoding.pixelBudget, loader: ObjectIdentifier(loader as AnyObject))
    }

    /// Downloaded `bytes` decoded: by the decode the other variants of the source share (keeping its image in memory
    /// for the variants that follow, when `keepsInMemory`), or alone on the decoding threads.
    private func decode(_ bytes: [UInt8], keepsInMemory: Bool) async -> Result<Image, CodecError> {
        let decoder = self.decoder
        guard sharesDecodes else {
            manager.sourceDecodes.countDecode()
            return await withTaskExecutorPreference(manager.decodingPool) {
                Result { () throws(CodecError) in try decoder.decode(bytes) }
            }
        }
        let cache = self.cache
        let baseKey = self.baseKey
        return await manager.sourceDecodes.decode(
            bytes, key: sourceDecodeKey, job: ObjectIdentifier(self), decoder: decoder, on: manager.decodingPool
        ) { image, header, size in
            guard keepsInMemory else { return }
            cache.storeDecodedSource(
                DecodedSource(image: image, header: header, size: size, options: self.decoding), forKey: baseKey,
                expiration: self.request.memoryCacheExpiration)
        }
    }

    /// Runs the transform hook (unless the image is animated and the request did not ask) and the processors;
    /// returns the transformed image (`nil` when the hook left it alone) and the final one.
    private func transformAndProcess(_ image: Image) async -> Result<(Image?, Image), ImageError> {
        var transformed: Image?
        if let transform = manager.configuration.transformDownloadedImage,
            !image.isAnimated || request.options.contains(.transformAnimatedImage)
        {
            let url = request.url
            let queued = await manager.processingQueue.run(for: url) {
                await withTaskExecutorPreference(manager.processingPool) {
                    Result { () throws(ImageError) -> Image? in
                        do {
                            return try transform(image, url)
                        } catch {
                            throw .processingFailed(identifier: "transformDownloadedImage", error: error)
                        }
                    }
                }
            }
            guard let outcome = queued else { return .failure(.cancelled) }
            switch outcome {
            case .success(let image): transformed = image
            case .failure(let error): return .failure(error)
            }
        }
        switch await process(transformed ?? image) {
        case .success(let final): return .success((transformed, final))
        case .failure(let error): return .failure(error)
        }
    }

    private func process(_ image: Image) async -> Result<Image, ImageError> {
        let processors = request.processors
        guard !processors.isEmpty else { return .success(image) }
        return await manager.tracing.withSpan("osprey.process") { span in
            span.set("osprey.processors", processors.map(\.identifier).joined(separator: "|"))
            let queued = await manager.processingQueue.run(for: request.url) {
                await withTaskExecutorPreference(manager.processingPool) {
                    Result { () throws(ImageError) in try ImageManager.process(image, with: processors) }
                }
            }
            return span.record(queued ?? .failure(.cancelled))
        }
    }

    /// The disk writes for a downloaded image: the original (its bytes, or the transformed image re-encoded) under the
    /// base key with the origin's validators, and with ``ImageManager/Configuration/storesProcessedImagesOnDisk`` the
    /// variant under its own key. `nil` for `cacheMemoryOnly`. A write that fails is logged and reported as the
    /// store's outcome; so is a disk cache that stores nothing because its directory is unusable.
    ///
    /// Original bytes are staged here, before the image is delivered, so a load of another variant that follows the
    /// delivery derives it from them rather than downloading again while the write is on its way. The store keeps
    /// only the images it will encode: a decoded image it does not need (the original when its bytes are stored) is
    /// not held while the write runs after the memory budget was given back.
    private func diskStore(original: Image, bytes: [UInt8]?, final: Image, validators: HTTPValidators) -> Store? {
        guard !request.options.contains(.cacheMemoryOnly) else { return nil }
        let baseKey = self.baseKey
        let variantKey = key.variantKey
        let storesVariant =
            manager.configuration.storesProcessedImagesOnDisk && variantKey != baseKey && request.keepsVariant
        let cache = self.cache
        let logger = manager.configuration.logger
        let url = request.url
        let expiration = request.diskCacheExpiration
        // The default serializer keeps the original's bytes as they are: staged now. Another is given the image
        // (with its bytes) on the thread pool when the write runs.
        let staged =
            cache.keepsOriginalBytes
            ? bytes.map {
                cache.dataCache.stageData($0, forKey: baseKey, validators: validators, expiration: expiration)
            }
            : nil
        let originalToSerialize = staged == nil ? original : nil
        let originalBytes = staged == nil ? bytes : nil
        let variantToSerialize = storesVariant ? final : nil
        return { [self] in
            await observe(.store)
            return await manager.tracing.withSpan("osprey.cache.store") { span in
                do throws(OspreyError) {
                    if let staged {
                        try await staged()
                    } else if let originalToSerialize {
                        try await cache.storeOnDisk(
                            originalToSerialize, original: originalBytes, forKey: baseKey, validators: validators,
                            expiration: expiration, coders: decoding.coders)
                    }
                    if let variantToSerialize {
                        try await cache.storeOnDisk(
                            variantToSerialize, original: nil, forKey: variantKey, validators: validators,
                            expiration: expiration, coders: decoding.coders)
                    }
                    return .stored
                } catch {
                    span.fail(error)
                    cache.logStoreFailure(error, url: url, to: logger)
                    return .failed(error)
                }
            }
        }
    }

    private func observe(_ stage: ImageManager.Stage) async {
        await manager.configuration.stageObserver?(stage, request.url)
    }
}

/// Decodes with a job's options, at the size the request's decoding-size hint gives from the header.
struct JobDecoder: Sendable {
    let options: DecodingOptions
    let hint: (any DecodingSizeHint)?

    /// Decodes with `options`, at the size `request`'s ``ImageRequest/decodingSizeHint`` gives, unless the request
    /// sets a target size of its own.
    init(options: DecodingOptions, request: ImageRequest) {
        self.options = options
        hint = request.targetSize == nil ? request.decodingSizeHint : nil
    }

    /// Decodes with `options` as they are.
    init(options: DecodingOptions) {
        self.options = options
        hint = nil
    }

    /// The size a decode of an image with `header` is asked for: the options' target size, else the hint's; `nil`
    /// for the full size.
    func size(for header: ImageHeader) -> ImageSize? {
        if let size = options.targetSize { return size }
        return (try? hint?.decodingSize(for: header)) ?? nil
    }

    /// The options a decode of `bytes` runs with.
    private func options(for bytes: [UInt8]) -> DecodingOptions {
        hint?.decodingOptions(for: bytes, options: options) ?? options
    }

    func decode(_ bytes: [UInt8]) throws(CodecError) -> Image {
        try ImageDecoder.decode(bytes, options: options(for: bytes))
    }

    /// Decodes bytes read from the data store, as `serializer` reads what it keeps (the default serializer decodes
    /// them as ``decode(_:)`` does).
    func decodeStored(_ bytes: [UInt8], serializer: any CacheSerializer) throws -> Image {
        try serializer.image(from: bytes, options: options(for: bytes))
    }

    /// What decoding `bytes` will take, at the size ``decode(_:)`` decodes at; `nil` when the header cannot be read
    /// (the decode then fails before allocating).
    func estimate(_ bytes: [UInt8]) -> DecodingEstimate? {
        try? ImageDecoder.memoryEstimate(for: bytes, options: options(for: bytes))
    }
}

extension ImageManager {
    /// Runs `processors` in order, stopping between them when the task is cancelled.
    static func process(_ image: Image, with processors: [any ImageProcessing]) throws(ImageError) -> Image {
        var image = image
        for processor in processors {
            guard !Task.isCancelled else { throw .cancelled }
            do {
                image = try processor.process(image)
            } catch is CancellationError {
                throw .cancelled
            } catch {
                throw .processingFailed(identifier: processor.identifier, error: error)
            }
        }
        return image
    }
}
