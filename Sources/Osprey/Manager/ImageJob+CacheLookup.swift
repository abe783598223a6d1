import OspreyCodecs

// A job's first stage: what the caches hold (memory was tried by the caller): a decoded source in memory, a
// stored variant, the original on disk, decoded within the memory budget.
extension ImageJob {
    /// Memory (bytes, when memory keeps bytes), then a stored variant, then the original on disk, decoded and
    /// processed within the memory budget; the result is put in memory. Under `refreshCached` it also reads the
    /// original bytes and validators. A miss is `nil`; bytes that do not decode are a miss too (the next source is
    /// tried); a budget that refuses the decode fails the load.
    func lookUp() async -> Result<Cached?, ImageError> {
        let variantKey = key.variantKey
        // The manager looked memory up before the job began, except for a revalidation; a request that does not keep
        // its final image (an encoded load's) does not look for one.
        if request.keepsVariant, request.options.contains(.refreshCached),
            let image = cache.imageInMemory(forKey: variantKey)
        {
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
        // original on disk: memory is looked up once, the disk once per key.
        var sources: [CachedSource] = cache.dataInMemory(forKey: baseKey).map { [.originalInMemory($0)] } ?? []
        if readsVariant { sources.append(.variant) }
        sources.append(.originalOnDisk)
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
            let isVariant = source.isVariant
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
            switch await Self.reserve(bytes, of: budget) {
            case .success(let granted): reservation = granted
            case .failure(let error): return .failure(error)
            }
        }
        defer { reservation?.release() }
        guard case .success(let image) = await process(source.image) else { return nil }
        return .success(image)
    }

    /// What a cached image may be made from.
    private enum CachedSource {
        /// The processed variant on disk (``ImageManager/Configuration/storesProcessedImagesOnDisk``).
        case variant
        /// The original's bytes in memory (memory keeps bytes), found already.
        case originalInMemory([UInt8])
        /// The original's bytes on disk.
        case originalOnDisk

        var isVariant: Bool {
            if case .variant = self { true } else { false }
        }
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
        let isVariant = source.isVariant
        let decoder = isVariant ? JobDecoder(options: manager.configuration.decoding) : self.decoder
        let key = isVariant ? self.key.variantKey : baseKey
        let budget = manager.configuration.memoryBudget
        let needed: @Sendable ([UInt8]) -> Int? = { [self] bytes in
            isVariant ? decoder.estimate(bytes)?.peakBytes : memoryNeeded(for: bytes)
        }
        enum Attempt {
            case done(CachedDecode)
            case needsMemory(ImageCache.StoredData, Int)
        }
        let cache = self.cache
        let serializer = cache.configuration.serializer
        let attempt = await withTaskExecutorPreference(manager.decodingPool) { () -> Attempt in
            let stored: ImageCache.StoredData?
            switch source {
            case .originalInMemory(let bytes): stored = ImageCache.StoredData(bytes: bytes, cacheType: .memory)
            case .variant, .originalOnDisk: stored = cache.storedOnDisk(forKey: key)
            }
            guard let stored else { return .done(.miss) }
            var reservation: MemoryBudget.Reservation?
            if let budget, let count = needed(stored.bytes) {
                guard let granted = budget.reserveIfFree(count) else { return .needsMemory(stored, count) }
                reservation = granted
            }
            manager.decodeCounts.countDecode()
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
            switch await Self.reserve(count, of: budget) {
            case .success(let granted): reservation = granted
            case .failure(let error): return .failure(error)
            }
            manager.decodeCounts.countDecode()
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
}
