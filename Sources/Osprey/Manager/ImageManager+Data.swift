public import FoundationEssentials
import Logging
public import OspreyCodecs

/// What a data-only load (``ImageManager/data(for:progress:)``) produced: the original encoded bytes, never decoded.
public struct DataResult: Sendable {
    /// The encoded image as the origin served it (or as the cache stored it).
    public var data: [UInt8]
    /// Its header, read without decoding: format, stored size and orientation.
    public var header: ImageHeader
    /// Where the bytes came from: ``CacheType/memory`` (the memory cache keeps bytes),
    /// ``CacheType/disk``, or ``CacheType/notCached`` (downloaded now).
    public var cacheType: CacheType
    /// The URL that answered, after redirects; the requested URL for a cache hit.
    public var url: URL
    /// Which caches the origin lets keep the bytes; ``StoragePermission/anyCache`` for a cache hit.
    public var storagePermission: StoragePermission
    /// What became of the disk write of downloaded bytes; `nil` for a cache hit or
    /// ``ImageRequest/Options/cacheMemoryOnly``.
    public var diskStore: DiskStoreOutcome?
}

extension ImageManager {
    /// Loads the encoded bytes of `request`'s URL without decoding them (Nuke's `loadData`): the memory cache when it
    /// keeps bytes, then the disk cache, then the loader; downloaded bytes are written to the disk cache, as the
    /// origin allows, before this returns. What a prefetch into the disk cache and a fetch that writes the original
    /// need: no decode, no memory budget, no decoding thread.
    ///
    /// The bytes must be an image: the header is read (by the manager's coders) before they are stored, and bytes
    /// whose header cannot be read fail with ``ImageError/decodingFailed(_:)`` and enter the failed-URL list. The
    /// request's processors, size and decoding options do not apply; its cache options and disk expiration do
    /// (``ImageRequest/Options/fromCacheOnly``, ``ImageRequest/Options/fromLoaderOnly``,
    /// ``ImageRequest/Options/cacheMemoryOnly``, ``ImageRequest/Options/refreshCached``, which asks the origin with
    /// the stored validators), as do ``ImageRequest/Options/retryFailed``, the priority, cookie and certificate
    /// options. The download is shared with every other load of the URL under way (the downloader coalesces it).
    /// Cancelling the calling task cancels the load (``ImageError/cancelled``).
    ///
    /// ```swift
    /// let result = try await manager.data(for: ImageRequest(url: url, priority: .low))
    /// print(result.header.format, result.data.count, result.diskStore as Any)
    /// ```
    nonisolated(nonsending) public func data(
        for request: ImageRequest, progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) async throws(ImageError) -> DataResult {
        let url = request.url
        let options = request.options
        if isShutDown { throw .cancelled }
        if hasNoSourceLeft(request) {
            throw .previouslyFailed(url, reason: failedURLs.failure(for: url))
        }
        let cache = request.cache ?? self.cache
        let baseKey = cacheKey(for: url)
        var cached: DataResult?
        if options.looksOnDisk {
            if let stored = await cache.storedData(forKey: baseKey) {
                cached = try? result(stored.bytes, from: stored.cacheType, url: url)
            }
            if let cached, !options.contains(.refreshCached) { return cached }
        } else if options.contains(.fromMemoryCacheOrRefresh), !options.contains(.fromLoaderOnly),
            let bytes = cache.dataInMemory(forKey: baseKey), let inMemory = try? result(bytes, from: .memory, url: url)
        {
            return inMemory
        }
        guard !Task.isCancelled else { throw .cancelled }
        if options.contains(.fromCacheOnly) {
            guard let cached else { throw .notCached(url) }
            return cached
        }
        if let shouldDownload = configuration.shouldDownload, !shouldDownload(url) {
            guard let cached else { throw .downloadDeclined(url) }
            return cached
        }

        let validators = cached != nil ? await cache.dataCache.validators(forKey: baseKey) : nil
        let response = try await downloadFirstSource(
            of: request, loader: request.loader ?? loader, priority: request.priority, validators: validators,
            progress: progress, started: { _ in }
        ).get()
        if let cached, response.isNotModified || cached.data == response.body { return cached }
        if response.isNotModified {
            throw .downloadFailed(.httpStatus(code: 304, headers: response.headers))
        }
        var loaded: DataResult
        do throws(CodecError) {
            loaded = try result(response.body, from: .notCached, url: response.url)
        } catch {
            failedURLs.record(response.requestedURL, failure: .decodingFailed(error))
            throw .decodingFailed(error)
        }
        failedURLs.remove(response.requestedURL)
        loaded.storagePermission = response.storagePermission
        guard !options.contains(.cacheMemoryOnly) else { return loaded }
        guard response.storagePermission.allowsStoring(inSharedCache: configuration.isSharedCache) else {
            // A copy stored before the origin said otherwise must not outlive its word.
            if cached != nil { await cache.dataCache.removeData(forKey: baseKey) }
            loaded.diskStore = .forbiddenByOrigin
            return loaded
        }
        do throws(CacheError) {
            try await cache.storeData(
                response.body, forKey: baseKey, validators: response.validators, expiration: request.diskCacheExpiration
            )
            loaded.diskStore = .stored
        } catch {
            cache.logStoreFailure(error, url: url, to: configuration.logger)
            loaded.diskStore = .failed(error)
        }
        return loaded
    }

    /// `bytes` with their header, read by the manager's coders.
    private func result(
        _ bytes: [UInt8], from cacheType: CacheType, url: URL
    ) throws(CodecError) -> DataResult {
        let header = try ImageHeader(reading: bytes, coders: configuration.decoding.coders)
        return DataResult(
            data: bytes, header: header, cacheType: cacheType, url: url, storagePermission: .anyCache, diskStore: nil)
    }
}
