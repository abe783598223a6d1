import FoundationEssentials
import Logging
import OspreyCodecs
import Synchronization

extension ImageManager {
    /// Loads `request` and encodes its image as `output` — the last stage of the pipeline, what an image proxy
    /// answers with: the encoded bytes in memory, else on disk (with
    /// ``Configuration/storesProcessedImagesOnDisk``), else the image (through every cache and the download, as
    /// ``image(for:)-(ImageRequest)`` loads it) encoded now on the manager's processing threads and kept in memory and,
    /// with that setting, on disk under the variant's key (``cacheKey(for:as:)``), as the origin allows.
    ///
    /// Loads of one variant (the same request and output) under way at once make one encode, and every variant of a
    /// source shares its download and its decode. The load ends when its caller's task is cancelled
    /// (``ImageError/cancelled``); the encode goes on while another load waits for it, or to its end when a request
    /// has ``ImageRequest/Options/detached``.
    ///
    /// ```swift
    /// let request = try ImageRequest(url: url, processors: [.downsample(width: 320)])
    /// let result = try await manager.encodedImage(for: request, as: ImageOutput(.format(.webp)))
    /// print(result.encoded.bytes.count, result.encoded.digest, result.cacheType)
    /// ```
    nonisolated(nonsending) public func encodedImage(
        for request: ImageRequest, as output: ImageOutput
    ) async throws(ImageError) -> EncodedResult {
        let keys = cacheKeys(for: request, output: output)
        let immediate = await tracing.withSpan("osprey.cache.lookup") { span in
            let immediate = immediateOutcome(for: request, key: keys.variant)
            if case .success = immediate { span.set("osprey.cache.result", "memory") }
            return immediate
        }
        if let immediate { return try immediate.get() }
        let jobKey = self.jobKey(for: request, keys: keys)
        let subscribed = subscribeEncoded(
            to: jobKey, priority: request.priority, detached: request.options.contains(.detached))
        guard let subscribed else { throw .cancelled }
        if let job = subscribed.new {
            run(job) { [self] in
                let (outcome, store) = await produce(request, as: output, keys: keys)
                deliverEncoded(outcome, from: job)
                // After the delivery, still as part of the job: shutdown waits for the write.
                _ = await store?()
            }
        }
        return try await waitForEncoded(subscribed.number).get()
    }

    /// The key ``encodedImage(for:as:)`` caches `request`'s image encoded as `output` under, in memory and on disk:
    /// the request's variant key and the output's identifier. `nil` output: the key of the image itself.
    public func cacheKey(for request: ImageRequest, as output: ImageOutput? = nil) -> String {
        cacheKeys(for: request, output: output).variant
    }

    /// The outcome an encoded load has before any work: shut down, a URL on the failed list, or bytes in memory under
    /// `key`.
    private func immediateOutcome(for request: ImageRequest, key: String) -> Result<EncodedResult, ImageError>? {
        if isShutDown { return .failure(.cancelled) }
        if hasNoSourceLeft(request) {
            return .failure(.previouslyFailed(request.url, reason: failedURLs.failure(for: request.url)))
        }
        guard request.options.isDisjoint(with: [.fromLoaderOnly, .refreshCached]) else { return nil }
        let cache = request.cache ?? self.cache
        guard let encoded = cache.encodedImage(forKey: key) else { return nil }
        return .success(
            EncodedResult(
                encoded: encoded, cacheType: .memory, imageCacheType: nil, url: request.url,
                storagePermission: .anyCache))
    }

    /// The bytes `loaded` was decoded from, as ``ImageOutput/keepsSmallerSource`` may answer with them (see
    /// `ImageEncoder.sourceBytes`): those the load delivered, else (a memory hit, which keeps the image, not its
    /// bytes) those the disk cache holds, never downloaded again.
    private func sourceBytes(
        of loaded: ImageResult, for request: ImageRequest, as format: ImageFormat, output: ImageOutput
    ) async -> [UInt8]? {
        var data = loaded.data
        if data == nil {
            var cached = request
            cached.options.insert(.fromCacheOnly)
            data = try? await self.data(for: cached).data
        }
        return data.flatMap {
            ImageEncoder.sourceBytes($0, of: loaded.image, as: format, metadata: output.options.metadata)
        }
    }

    /// The work of one encoded variant, cached under `keys`: the bytes on disk, else the image encoded now and
    /// stored. Returns the outcome and, when nobody waits for it, the disk store still to do.
    private func produce(
        _ request: ImageRequest, as output: ImageOutput, keys: CacheKeys
    ) async -> (Result<EncodedResult, ImageError>, (@Sendable () async -> DiskStoreOutcome)?) {
        let key = keys.variant
        let cache = request.cache ?? self.cache
        let options = request.options
        let storesOnDisk = configuration.storesProcessedImagesOnDisk && !options.contains(.cacheMemoryOnly)
        if configuration.storesProcessedImagesOnDisk, options.looksOnDisk, !options.contains(.refreshCached),
            let found = await tracing.withSpan(
                "osprey.cache.lookup",
                { span in
                    let found = await encodedOnDisk(forKey: key, cache: cache, output: output)
                    span.set("osprey.cache.result", found == nil ? "miss" : "disk")
                    return found
                })
        {
            cache.storeEncodedInMemory(found, forKey: key, expiration: request.memoryCacheExpiration)
            let result = EncodedResult(
                encoded: found, cacheType: .disk, imageCacheType: nil, url: request.url, storagePermission: .anyCache)
            return (.success(result), nil)
        }

        // The image itself is not kept as a variant: its encoded bytes are.
        var imageRequest = request
        imageRequest.keepsVariant = false
        let loaded: ImageResult
        do throws(ImageError) {
            loaded = try await image(for: imageRequest, keys: keys.withoutOutput)
        } catch {
            return (.failure(error), nil)
        }
        let image = loaded.image
        let format = output.format(for: image)
        let encoded = await tracing.withSpan("osprey.encode") { span in
            span.set("osprey.image.format", "\(format)")
            let encoded = await withTaskExecutorPreference(processingPool) {
                Result { () throws(CodecError) in try output.encode(image) }
            }
            if case .success(let image) = span.record(encoded) { span.set("osprey.encode.bytes", image.bytes.count) }
            return encoded
        }
        encodeCount.wrappingAdd(1, ordering: .relaxed)
        var encodedNow: EncodedImage
        switch encoded {
        case .success(let image): encodedNow = image
        case .failure(let error): return (.failure(.encodingFailed(format: format, error)), nil)
        }
        if output.keepsSmallerSource, request.processors.allSatisfy(\.keepsPixels), request.decodingSizeHint == nil,
            let source = await sourceBytes(of: loaded, for: request, as: encodedNow.format, output: output),
            source.count < encodedNow.bytes.count, source.count <= output.maxBytes ?? .max
        {
            encodedNow = EncodedImage(bytes: source, format: encodedNow.format)
        }
        let encodedImage = encodedNow

        let permission = loaded.storagePermission
        let isShared = configuration.isSharedCache
        if !isShared || permission == .anyCache {
            cache.storeEncodedInMemory(encodedImage, forKey: key, expiration: request.memoryCacheExpiration)
        }
        var result = EncodedResult(
            encoded: encodedImage, cacheType: .notCached, imageCacheType: loaded.cacheType, url: loaded.url,
            storagePermission: permission)
        guard storesOnDisk, permission.allowsStoring(inSharedCache: isShared) else { return (.success(result), nil) }
        let store: @Sendable () async -> DiskStoreOutcome = { [configuration, tracing] in
            await tracing.withSpan("osprey.cache.store") { span in
                do throws(CacheError) {
                    // Marked private like its source, so that a shared cache on the same directory does not serve it.
                    let validators = HTTPValidators(isPrivate: permission == .privateCacheOnly)
                    try await cache.storeData(
                        encodedImage.bytes, forKey: key, validators: validators,
                        expiration: request.diskCacheExpiration)
                    if let quality = encodedImage.quality {
                        // The quality a search chose, beside the bytes: a disk hit tells it as the encode did.
                        await cache.dataCache.setExtendedData(Self.qualityRecord(quality), forKey: key)
                    }
                    return .stored
                } catch {
                    span.fail(error)
                    configuration.logger.warning(
                        "cannot cache the encoded image",
                        metadata: ["osprey.url": "\(request.url)", "osprey.error": "\(error)"])
                    return .failed(error)
                }
            }
        }
        if options.contains(.waitStoreCache) {
            result.diskStore = await store()
            return (.success(result), nil)
        }
        // Delivered first; the write runs on as part of the job.
        return (.success(result), store)
    }

    /// The encoded bytes on disk for `key`, when they are an image `coders` recognises; read off the caller's task.
    private func encodedOnDisk(
        forKey key: String, cache: ImageCache, output: ImageOutput
    ) async -> EncodedImage? {
        let found = await withTaskExecutorPreference(decodingPool) { () -> ([UInt8], ImageFormat)? in
            // Memory keeps encoded outputs in a level of their own, looked up before the job began.
            guard let bytes = cache.storedOnDisk(forKey: key)?.bytes else { return nil }
            let format = output.options.coders.format(of: bytes)
            return format == .unknown ? nil : (bytes, format)
        }
        guard let (bytes, format) = found else { return nil }
        // Only a search chooses a quality (by perception, or within the most bytes): its record, when there is one.
        let searches: Bool
        switch output.quality {
        case .perceptual: searches = true
        case .fixed: searches = output.maxBytes != nil
        }
        let quality = searches ? Self.quality(in: await cache.dataCache.extendedData(forKey: key)) : nil
        return EncodedImage(bytes: bytes, format: format, quality: quality)
    }

    /// The extended data an encoded variant's disk entry keeps its chosen quality in: `osprey-quality=N`.
    static func qualityRecord(_ quality: Int) -> [UInt8] {
        Array("osprey-quality=\(quality)".utf8)
    }

    /// The quality in `record` (``qualityRecord(_:)``'s), if it is one.
    static func quality(in record: [UInt8]?) -> Int? {
        guard let record, let text = String(validating: record, as: UTF8.self), text.hasPrefix("osprey-quality=")
        else { return nil }
        return Int(text.dropFirst("osprey-quality=".count))
    }
}
