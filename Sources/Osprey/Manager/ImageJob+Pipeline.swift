import Foundation
import Logging
import OspreyCodecs

// The stages of a job, in MISSION's order: disk (memory was tried by the caller), download, decode, transform and
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
        if !options.contains(.fromLoaderOnly) {
            await observe(.disk)
            cached = await lookUp()
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
            if !keepsOnDisk { await cache.diskCache.removeData(forKey: baseKey) }
        }
        if let cached, response.isNotModified || cached.originalBytes == response.body {
            // The cached image is current; nothing new is delivered.
            return (.success(cached.result), nil)
        }
        if response.isNotModified {
            return (.failure(.downloadFailed(.httpStatus(code: 304, headers: response.headers))), nil)
        }

        await observe(.decode)
        guard !Task.isCancelled else { return (.failure(.cancelled), nil) }
        let decoded: Image
        switch await decode(response.body) {
        case .success(let image): decoded = image
        case .failure(let error):
            manager.failedURLs.record(url, failure: error)
            return (.failure(error), nil)
        }

        await observe(.process)
        guard !Task.isCancelled else { return (.failure(.cancelled), nil) }
        let transformed: Image?
        let final: Image
        switch await transformAndProcess(decoded) {
        case .success(let images): (transformed, final) = images
        case .failure(let error): return (.failure(error), nil)
        }
        manager.failedURLs.remove(url)

        var result = ImageResult(
            image: final, data: transformed == nil ? response.body : nil, cacheType: .none, url: response.url,
            storagePermission: permission)
        let isOriginal = key.variantKey == baseKey
        if keepsInMemory {
            cache.storeInMemory(final, data: isOriginal ? result.data : nil, forKey: key.variantKey)
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
    /// processed; the result is put in memory. Under `refreshCached` it also reads the original bytes and validators.
    private func lookUp() async -> Cached? {
        let variantKey = key.variantKey
        let baseKey = self.baseKey
        let diskCache = cache.diskCache
        if let image = cache.imageInMemory(forKey: variantKey) {
            return await preparedForRevalidation(
                Cached(result: ImageResult(image: image, data: nil, cacheType: .memory, url: request.url)))
        }

        let decoder = self.decoder
        let plainDecoding = manager.configuration.decoding
        let memoryData = cache.dataInMemory(forKey: baseKey)
        let readsVariant = manager.configuration.storesProcessedImagesOnDisk && variantKey != baseKey
        let found = await withTaskExecutorPreference(manager.decodingPool) {
            () -> (image: Image, bytes: [UInt8]?, cacheType: ImageResult.CacheType, isVariant: Bool)? in
            if let memoryData, let image = try? decoder.decode(memoryData) {
                return (image, memoryData, .memory, false)
            }
            if readsVariant, let data = diskCache.blockingData(forKey: variantKey),
                let image = try? ImageDecoder.decode(data, options: plainDecoding)
            {
                return (image, nil, .disk, true)
            }
            guard !Task.isCancelled, let bytes = diskCache.blockingData(forKey: baseKey),
                let image = try? decoder.decode(bytes)
            else { return nil }
            return (image, bytes, .disk, false)
        }
        guard let found, !Task.isCancelled else { return nil }
        var image = found.image
        if !found.isVariant, !request.processors.isEmpty {
            guard case .success(let processed) = await process(image) else { return nil }
            image = processed
        }
        cache.storeInMemory(image, data: variantKey == baseKey ? found.bytes : nil, forKey: variantKey)
        return await preparedForRevalidation(
            Cached(
                result: ImageResult(image: image, data: found.bytes, cacheType: found.cacheType, url: request.url),
                originalBytes: found.bytes))
    }

    /// Under `refreshCached`, `cached` with the original bytes (read from disk when the hit did not bring them) and
    /// the stored validators; otherwise `cached` as it is.
    private func preparedForRevalidation(_ cached: Cached) async -> Cached {
        guard request.options.contains(.refreshCached) else { return cached }
        var cached = cached
        let diskCache = cache.diskCache
        let baseKey = self.baseKey
        if cached.originalBytes == nil {
            cached.originalBytes = await withTaskExecutorPreference(manager.decodingPool) {
                diskCache.blockingData(forKey: baseKey)
            }
        }
        cached.validators = await diskCache.entry(forKey: baseKey)?.validators
        return cached
    }

    /// Downloads the URL at the subscribers' highest priority, conditionally when `validators` are given; records a
    /// lasting failure (M3).
    private func download(validators: HTTPValidators?) async -> Result<DownloadResponse, ImageError> {
        let options = request.options
        var downloadRequest = DownloadRequest(url: request.url, priority: priority)
        if options.contains(.handleCookies) { downloadRequest.handlesCookies = true }
        if options.contains(.allowInvalidSSLCertificates) { downloadRequest.allowsInvalidCertificates = true }
        downloadRequest.validators = validators
        let decoder =
            options.contains(.progressiveDownload)
            ? IncrementalImageDecoder(options: decoding) : nil
        let task = loader.download(downloadRequest) { [weak self] progress in
            self?.received(progress, decoder: decoder)
        }
        setDataTask(task)
        do {
            return .success(try await task.response)
        } catch {
            if Task.isCancelled { return .failure(.cancelled) }
            manager.failedURLs.record(request.url, error: error)
            return .failure(.downloadFailed(error))
        }
    }

    private func decode(_ bytes: [UInt8]) async -> Result<Image, ImageError> {
        let decoder = self.decoder
        return await withTaskExecutorPreference(manager.decodingPool) {
            do throws(CodecError) {
                return .success(try decoder.decode(bytes))
            } catch {
                return .failure(.decodingFailed(error))
            }
        }
    }

    /// How the job decodes bytes (see ``ImageManager/decoder(for:)``).
    var decoder: JobDecoder { JobDecoder(options: decoding, request: request) }

    /// Runs the transform hook (unless the image is animated and the request did not ask) and the processors;
    /// returns the transformed image (`nil` when the hook left it alone) and the final one.
    private func transformAndProcess(_ image: Image) async -> Result<(Image?, Image), ImageError> {
        var transformed: Image?
        if let transform = manager.configuration.transformDownloadedImage,
            !image.isAnimated || request.options.contains(.transformAnimatedImage)
        {
            let url = request.url
            let outcome = await withTaskExecutorPreference(manager.processingPool) {
                Result { () throws(ImageError) -> Image? in
                    do {
                        return try transform(image, url)
                    } catch {
                        throw .processingFailed(identifier: "transformDownloadedImage", reason: "\(error)")
                    }
                }
            }
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
        return await withTaskExecutorPreference(manager.processingPool) {
            Result { () throws(ImageError) in try ImageManager.process(image, with: processors) }
        }
    }

    /// The disk writes for a downloaded image: the original (its bytes, or the transformed image re-encoded) under the
    /// base key with the origin's validators, and with ``ImageManager/Configuration/storesProcessedImagesOnDisk`` the
    /// variant under its own key. `nil` for `cacheMemoryOnly`. A write that fails is logged and reported as the
    /// store's outcome; so is a disk cache that stores nothing because its directory is unusable.
    ///
    /// Original bytes are staged here, before the image is delivered, so a load of another variant that follows the
    /// delivery derives it from them rather than downloading again while the write is on its way.
    private func diskStore(original: Image, bytes: [UInt8]?, final: Image, validators: HTTPValidators) -> Store? {
        guard !request.options.contains(.cacheMemoryOnly) else { return nil }
        let baseKey = self.baseKey
        let variantKey = key.variantKey
        let storesVariant = manager.configuration.storesProcessedImagesOnDisk && variantKey != baseKey
        let cache = self.cache
        let logger = manager.configuration.logger
        let url = request.url
        let staged = bytes.map { cache.diskCache.beginStore($0, forKey: baseKey, validators: validators) }
        return { [self] in
            await observe(.store)
            do throws(OspreyError) {
                guard !cache.diskCache.isMemoryOnly else {
                    let reason =
                        cache.diskCache.configuration.isReadOnly
                        ? "the disk cache is read-only"
                        : "the disk cache's directory cannot be used; caching in memory only"
                    throw .cacheWriteFailed(key: baseKey, reason: reason)
                }
                if let staged {
                    try await cache.diskCache.finishStore(staged)
                } else {
                    try await cache.storeOnDisk(original, data: nil, forKey: baseKey, validators: validators)
                }
                if storesVariant {
                    try await cache.storeOnDisk(final, data: nil, forKey: variantKey, validators: validators)
                }
                return .stored
            } catch {
                logger.warning(
                    "cannot cache the image", metadata: ["osprey.url": "\(url)", "osprey.error": "\(error)"])
                return .failed(error)
            }
        }
    }

    private func observe(_ stage: ImageManager.Stage) async {
        await manager.configuration.stageObserver?(stage, request.url)
    }
}

/// Decodes with a job's options, at a ``ImageProcessors/Downsample``'s decoding size when there is one.
struct JobDecoder: Sendable {
    let options: DecodingOptions
    let downsample: ImageProcessors.Downsample?

    /// Decodes with `options`, at the size the request's first processor asks for when that is a
    /// ``ImageProcessors/Downsample`` and the request sets no target size of its own (MISSION M16).
    init(options: DecodingOptions, request: ImageRequest) {
        self.options = options
        downsample = request.targetSize == nil ? request.processors.first as? ImageProcessors.Downsample : nil
    }

    func decode(_ bytes: [UInt8]) throws(CodecError) -> Image {
        guard let downsample else { return try ImageDecoder.decode(bytes, options: options) }
        return try downsample.decode(bytes, options: options)
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
                throw .processingFailed(identifier: processor.identifier, reason: "\(error)")
            }
        }
        return image
    }
}
