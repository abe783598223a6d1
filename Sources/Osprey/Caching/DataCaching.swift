/// A store of encoded bytes by key: the disk level of an ``ImageCache``, and the only way the ``ImageManager`` reads
/// and writes stored bytes. ``DiskCache`` is the default; another store (a shared volume, an object store, a test
/// double) plugs in through ``ImageCache/init(configuration:memoryCache:dataCache:)``.
///
/// ```swift
/// final class BucketCache: DataCaching { ... }
/// let cache = ImageCache(dataCache: BucketCache())
/// let manager = ImageManager(cache: cache)
/// ```
///
/// The manager calls ``cachedData(forKey:)`` on its own decoding threads, never on Swift's cooperative pool, so a
/// store may block there on its I/O; the async methods are called from tasks and must not block.
public protocol DataCaching: AnyObject, Sendable {
    /// The bytes stored for `key`; `nil` on a miss (a damaged entry is a miss too). May block on I/O.
    func cachedData(forKey key: String) -> [UInt8]?

    /// The HTTP validators stored with `key`'s bytes (ETag, Last-Modified, expiry), for a conditional request when
    /// the image is refreshed; `nil` when there is no entry.
    func validators(forKey key: String) async -> HTTPValidators?

    /// Stores `data` for `key` with the origin's `validators`, replacing what it held (its extended data included),
    /// until `expiration` (the store's own policy when `nil`).
    ///
    /// - Throws: ``CacheError/diskFull(key:)`` or ``CacheError/cacheWriteFailed(key:reason:)`` when the bytes
    ///   are not kept; what was stored before is kept then.
    func storeData(
        _ data: [UInt8], forKey key: String, validators: HTTPValidators, expiration: CacheExpiration?
    ) async throws(CacheError)

    /// Begins storing `data` for `key` at once, on the caller's thread, and returns the write to finish later. A
    /// store that can make the bytes readable before they are written (``DiskCache`` does) lets the manager deliver
    /// an image first and write after without a later load missing meanwhile. By default nothing is staged: the
    /// returned write calls ``storeData(_:forKey:validators:expiration:)``.
    func stageData(
        _ data: [UInt8], forKey key: String, validators: HTTPValidators, expiration: CacheExpiration?
    ) -> DataWrite

    /// The extended data kept with `key`'s entry (SDWebImage's extended data: what a caller stores about an entry
    /// beside its bytes); `nil` when it has none or there is no entry.
    func extendedData(forKey key: String) async -> [UInt8]?

    /// Replaces the extended data of `key`'s entry (`nil` removes it); returns whether there was an entry. A store
    /// of `key`'s bytes replaces it too.
    @discardableResult
    func setExtendedData(_ data: [UInt8]?, forKey key: String) async -> Bool

    /// Removes `key`'s entry.
    func removeData(forKey key: String) async

    /// Whether `key` has an entry.
    func containsData(forKey key: String) async -> Bool

    /// The keys among `keys` that have an entry: what a prefetch skips. By default ``containsData(forKey:)`` for each;
    /// a store that can answer for many keys at once (``DiskCache``: one index query per 128 keys) should.
    func containedKeys(among keys: [String]) async -> Set<String>

    /// Removes every entry.
    func removeAllData() async

    /// The entries' total size in bytes and their count, when the store can tell without reading every entry
    /// (`GET /health` reports them); `nil` by default.
    func storedTotals() async -> (size: Int, count: Int)?

    /// Finishes what the store has under way and lets go of what it holds open (files, connections), for a process
    /// about to exit; the store may still answer afterwards, from memory or not at all. Nothing by default.
    func close() async
}

/// The write that finishes a store begun by `DataCaching.stageData(_:forKey:validators:)`.
public typealias DataWrite = @Sendable () async throws(CacheError) -> Void

extension DataCaching {
    /// Which of `keys` have an entry, asking ``containsData(forKey:)`` of each (a store that can answer in one query
    /// overrides it).
    public func containedKeys(among keys: [String]) async -> Set<String> {
        var contained: Set<String> = []
        for key in keys where await containsData(forKey: key) { contained.insert(key) }
        return contained
    }

    /// The store of `data` for `key`, made when the returned write runs: a store without staging has nothing to give
    /// readers before that.
    public func stageData(
        _ data: [UInt8], forKey key: String, validators: HTTPValidators, expiration: CacheExpiration?
    ) -> DataWrite {
        { () async throws(CacheError) in
            try await self.storeData(data, forKey: key, validators: validators, expiration: expiration)
        }
    }

    /// `nil`: a store that cannot count its entries cheaply says nothing.
    public func storedTotals() async -> (size: Int, count: Int)? { nil }

    /// Nothing to finish or close.
    public func close() async {}

    /// Stores `data` for `key` under the store's own expiration policy.
    public func storeData(_ data: [UInt8], forKey key: String, validators: HTTPValidators) async throws(CacheError) {
        try await storeData(data, forKey: key, validators: validators, expiration: nil)
    }
}

extension DiskCache: DataCaching {
    /// ``blockingData(forKey:)``: on the calling thread.
    public func cachedData(forKey key: String) -> [UInt8]? {
        blockingData(forKey: key)
    }

    /// The validators of ``entry(forKey:)``.
    public func validators(forKey key: String) async -> HTTPValidators? {
        await entry(forKey: key)?.validators
    }

    /// ``store(_:forKey:validators:expiration:extension:extendedData:)``, failing with
    /// ``CacheError/cacheWriteFailed(key:reason:)`` where that stores nothing silently: a read-only cache, or one
    /// whose directory cannot be used.
    public func storeData(
        _ data: [UInt8], forKey key: String, validators: HTTPValidators, expiration: CacheExpiration?
    ) async throws(CacheError) {
        try requireDirectory(toStore: key)
        try await store(data, forKey: key, validators: validators, expiration: expiration)
    }

    /// Stages `data`, readable from now on, and returns its write (which fails as
    /// ``storeData(_:forKey:validators:expiration:)`` does).
    public func stageData(
        _ data: [UInt8], forKey key: String, validators: HTTPValidators, expiration: CacheExpiration?
    ) -> DataWrite {
        let attributes = StoreAttributes(expiration: expiration, extension: configuration.expirationExtension)
        let pending = beginStore(data, forKey: key, validators: validators, attributes: attributes)
        return { () async throws(CacheError) in
            try self.requireDirectory(toStore: key)
            try await self.finishStore(pending)
        }
    }

    /// ``removeAll()``.
    public func removeAllData() async {
        await removeAll()
    }

    /// ``totals()``: one indexed row.
    public func storedTotals() async -> (size: Int, count: Int)? {
        await totals()
    }
}
