import FoundationEssentials
import OspreyCodecs
import Synchronization

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
        if joinsDecode { manager.joinSource(decodeSource, job: id, decoder: decoder) }
        defer { if joinsDecode { manager.leaveSource(decodeSource, job: id) } }
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

    // MARK: Stages (the cache in ImageJob+CacheLookup, decoding and processing in ImageJob+Decode, the disk
    // store in ImageJob+DiskStore)

    /// Downloads the URL (or the first of its alternatives that answers) at the subscribers' highest priority,
    /// conditionally when `validators` are given; records lasting failures.
    private func download(validators: HTTPValidators?) async -> Result<DownloadResponse, ImageError> {
        let decoder =
            request.options.contains(.progressiveDownload)
            ? IncrementalImageDecoder(options: decoding) : nil
        let response = await manager.downloadFirstSource(
            of: request, loader: loader, priority: priority, validators: validators,
            progress: { [weak self] progress in self?.received(progress, decoder: decoder) },
            started: { setDataTask($0) })
        isDownloaded.store(true, ordering: .releasing)
        return response
    }

    /// Tells the configuration's stage observer, if any, that the job reached `stage`.
    func observe(_ stage: ImageManager.Stage) async {
        await manager.configuration.stageObserver?(stage, request.url)
    }
}
