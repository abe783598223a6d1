public import FoundationEssentials
public import OspreyCodecs

/// What a load delivers: the image, the bytes it was decoded from, and where it came from.
public struct ImageResult: Sendable {
    /// The image, after the transform hook and the request's processors.
    public var image: Image
    /// The encoded bytes the image was decoded from (before processors), when known: always for a download and a
    /// disk hit, for a memory hit only when the memory cache keeps bytes. `nil` for a transformed image.
    public var data: [UInt8]?
    /// Where it came from.
    public var cacheType: CacheType
    /// The URL that answered, after redirects; the requested URL for a cache hit.
    public var url: URL
    /// Whether more may follow for the same load: `false` for a progressive preview and for the cached image a
    /// ``ImageRequest/Options/refreshCached`` load delivers before revalidating.
    public var isFinal: Bool
    /// Which caches the origin lets keep the image (its `Cache-Control`): ``StoragePermission/anyCache`` for a
    /// cache hit, which was stored because it could be.
    public var storagePermission: StoragePermission
    /// What became of the disk write of a downloaded image. `nil` when none was due (a cache hit,
    /// ``ImageRequest/Options/cacheMemoryOnly``) or when the load did not wait for it: only a load with
    /// ``ImageRequest/Options/waitStoreCache`` knows whether it succeeded.
    public var diskStore: DiskStoreOutcome?

    /// Makes a result.
    public init(
        image: Image, data: [UInt8]?, cacheType: CacheType, url: URL, isFinal: Bool = true,
        storagePermission: StoragePermission = .anyCache, diskStore: DiskStoreOutcome? = nil
    ) {
        self.image = image
        self.data = data
        self.cacheType = cacheType
        self.url = url
        self.isFinal = isFinal
        self.storagePermission = storagePermission
        self.diskStore = diskStore
    }
}

/// What became of the disk write of a downloaded image (``ImageResult/diskStore``).
public enum DiskStoreOutcome: Sendable, Hashable {
    /// The image is in the disk cache.
    case stored
    /// Not written: the origin forbade it (``StoragePermission``).
    case forbiddenByOrigin
    /// The write failed — the disk is full, or the cache's directory cannot be written — and the image is in memory
    /// only; what the cache held before is intact.
    case failed(CacheError)

    /// Whether the image is in the disk cache.
    public var isStored: Bool { self == .stored }
}
