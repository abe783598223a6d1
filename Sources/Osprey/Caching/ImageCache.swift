import FoundationEssentials
import Logging
internal import NIOPosix
public import OspreyCodecs

/// The two cache levels together, with the seeds' operations: decoded images in an
/// ``ImageCaching`` store (a ``MemoryCache`` by default), their encoded bytes in a ``DataCaching`` store (a
/// ``DiskCache`` by default).
///
/// ```swift
/// let cache = ImageCache(configuration: .init(namespace: "avatars"))
/// try await cache.store(image, data: bytes, forKey: url)
/// if let hit = try await cache.query(forKey: url) {
///     print(hit.cacheType)            // .memory, or .disk (decoded, and now in memory too)
/// }
/// ```
///
/// A disk hit is read and decoded in one job on NIO's thread pool, never on the caller's task. What the disk keeps
/// for an image is the ``Configuration/serializer``'s choice: by default an original's own bytes, and an image stored
/// without them encoded in its source format (PNG when it has alpha or its format is unknown).
/// Every read of stored bytes, the ``ImageManager``'s included, goes through one lookup: bytes in memory (when memory
/// keeps bytes), else the disk level.
public final class ImageCache: Sendable {
    /// What the cache keeps and where.
    public struct Configuration: Sendable {
        /// Whether images are kept in memory at all. `true` by default.
        public var storesInMemory = true
        /// Whether memory keeps decoded images (`true`, the default) or only their bytes, decoding on every query
        /// (the seeds' `shouldDecompressImages`).
        public var decodeImages = true
        /// The memory level's limits (cost is bytes of pixels, or of data without `decodeImages`); the default
        /// memory store is made with them, and the manager's other memory levels follow its count limit, entry
        /// lifetime and memory-pressure response.
        public var memory = MemoryCache<String, Image>.Configuration()
        /// The disk level's location and limits, for the default store (a ``DiskCache``).
        public var disk = DiskCache.Configuration()
        /// How images become the bytes the disk level keeps, and those bytes images again: an original's own bytes,
        /// anything else in its source format (``DefaultCacheSerializer``) by default.
        public var serializer: any CacheSerializer = DefaultCacheSerializer()
        /// The bytes of decoded sources an ``ImageManager`` keeps in memory beside the final images, so that another
        /// variant of a source (another size, other processors, another output format) is made without reading and
        /// decoding it again: `nil` (a quarter of the memory level's cost limit) by default, 0 for none.
        public var decodedSourceCostLimit: Int?
        /// The bytes of encoded images (``ImageManager/encodedImage(for:as:)``) kept in memory: `nil` (a quarter of
        /// the memory level's cost limit) by default, 0 for none.
        public var encodedCostLimit: Int?

        /// The default configuration, with the disk cache in `namespace`.
        public init(namespace: String = "default") {
            disk.namespace = namespace
        }
    }

    /// A query's answer: the image, its encoded bytes when known, and where it was found.
    public struct Hit: Sendable {
        /// The decoded image.
        public var image: Image
        /// The encoded bytes: always for a disk hit (animated images need them), for a memory hit when memory keeps
        /// bytes (`decodeImages` off).
        public var data: [UInt8]?
        /// Where it was found: ``CacheType/memory`` or ``CacheType/disk``.
        public var cacheType: CacheType
    }

    /// The configuration it was made with.
    public let configuration: Configuration
    /// The memory level (decoded images), unless `decodeImages` is off.
    public let memoryCache: any ImageCaching
    /// The memory level's bytes when `decodeImages` is off.
    private let memoryData: MemoryCache<String, [UInt8]>
    /// The disk level: every stored byte the manager reads or writes goes through it.
    public let dataCache: any DataCaching
    /// The disk level when it is the default store: for what only a ``DiskCache`` has (totals, entries, events,
    /// ``DiskCache/close()``); `nil` when another store was plugged in.
    public var diskCache: DiskCache? { dataCache as? DiskCache }

    /// Logs a disk store that failed: a warning, unless the disk cache works in memory only, which it said once when
    /// it opened (its directory unusable: every store fails the same way, and a warning per image would bury the one
    /// that says why); then a debug message.
    func logStoreFailure(_ error: any Error, url: URL, to logger: Logger) {
        let level: Logger.Level = diskCache?.isMemoryOnly == true ? .debug : .warning
        logger.log(
            level: level, "cannot cache the image", metadata: ["osprey.url": "\(url)", "osprey.error": "\(error)"])
    }
    /// Decoded sources, by base key, for the variants that follow.
    let decodedSources: MemoryCache<String, DecodedSource>
    /// Encoded variants, by their key.
    let encodedImages: MemoryCache<String, EncodedImage>

    /// Makes the two levels: the stores given, else a ``MemoryCache`` from ``Configuration/memory`` and a
    /// ``DiskCache`` from ``Configuration/disk``.
    public init(
        configuration: Configuration = Configuration(), memoryCache: (any ImageCaching)? = nil,
        dataCache: (any DataCaching)? = nil
    ) {
        self.configuration = configuration
        let memory = configuration.memory
        self.memoryCache = memoryCache ?? MemoryCache<String, Image>(configuration: memory)
        self.memoryData = MemoryCache(configuration: Self.level(like: memory, costLimit: memory.costLimit))
        self.dataCache = dataCache ?? DiskCache(configuration: configuration.disk)
        self.decodedSources = MemoryCache(
            configuration: Self.level(
                like: memory, costLimit: configuration.decodedSourceCostLimit ?? memory.costLimit / 4))
        self.encodedImages = MemoryCache(
            configuration: Self.level(like: memory, costLimit: configuration.encodedCostLimit ?? memory.costLimit / 4))
    }

    /// A memory level beside the images' one: its count limit, entry lifetime and memory-pressure response, with a
    /// cost limit of its own.
    private static func level<Value>(
        like memory: MemoryCache<String, Image>.Configuration, costLimit: Int
    ) -> MemoryCache<String, Value>.Configuration {
        var level = MemoryCache<String, Value>.Configuration(costLimit: costLimit, countLimit: memory.countLimit)
        level.expiration = memory.expiration
        level.expirationExtension = memory.expirationExtension
        level.respondsToMemoryPressure = memory.respondsToMemoryPressure
        return level
    }

    // MARK: Storing

    /// Stores `image` for `key` in memory and, with `toDisk`, on disk as ``Configuration/serializer`` makes it into
    /// bytes: by default `data` when given (the bytes it was decoded from), else the image encoded in its source
    /// format (PNG when it has alpha or no known format). `validators` (the origin's ETag, Last-Modified, max-age)
    /// are kept with the disk entry for revalidation. Each level keeps the entry until its own expiration policy
    /// ends it, or until `memoryExpiration` and `diskExpiration` when given. `coders` are the encoders the serializer
    /// may use: the cache has no registry of its own, so that an ``ImageManager``'s (its
    /// ``ImageManager/Configuration/decoding``) is the only one to set; ``ImageManager/store(_:data:for:toDisk:)``
    /// passes it.
    ///
    /// - Throws: ``CacheError/diskFull(key:)`` or ``CacheError/cacheWriteFailed(key:reason:)`` when the disk
    ///   write fails (the memory level is stored regardless).
    public func store(
        _ image: Image, data: [UInt8]? = nil, forKey key: String, toDisk: Bool = true,
        validators: HTTPValidators = HTTPValidators(), memoryExpiration: CacheExpiration? = nil,
        diskExpiration: CacheExpiration? = nil, coders: ImageCoderRegistry = .shared
    ) async throws(CacheError) {
        storeInMemory(image, data: data, forKey: key, expiration: memoryExpiration)
        guard toDisk else { return }
        try await storeOnDisk(
            image, original: data, forKey: key, validators: validators, expiration: diskExpiration, coders: coders)
    }

    /// Stores on disk only: the serializer's bytes for `image` (with `original`, the bytes it was decoded from, when
    /// it is an original as downloaded), made on NIO's thread pool with `coders`.
    func storeOnDisk(
        _ image: Image, original: [UInt8]?, forKey key: String, validators: HTTPValidators,
        expiration: CacheExpiration?, coders: ImageCoderRegistry
    ) async throws(CacheError) {
        let serializer = configuration.serializer
        let bytes: [UInt8]
        if let original, keepsOriginalBytes {
            bytes = original  // The default keeps an original's bytes: no hop to the pool for nothing.
        } else {
            let serialized = try await serialized(forKey: key) {
                try serializer.wrap(serializer.data(for: image, original: original, coders: coders))
            }
            guard let serialized else { return }
            bytes = serialized
        }
        try await dataCache.storeData(bytes, forKey: key, validators: validators, expiration: expiration)
    }

    /// What `make` gives, run on NIO's thread pool (a serializer may take its time); its error as the store's, and
    /// `nil` when the pool is shut down (nothing is stored).
    private func serialized(
        forKey key: String, _ make: @escaping @Sendable () throws -> [UInt8]
    ) async throws(CacheError) -> [UInt8]? {
        switch try? await NIOThreadPool.singleton.runIfActive({ Result { try make() } }) {
        case .success(let bytes): return bytes
        case .failure(let error): throw .cacheWriteFailed(key: key, reason: "\(error)")
        case nil: return nil
        }
    }

    /// Whether the serializer keeps an original's bytes as they are, so the manager may stage them before delivering
    /// the image (a serializer of another kind is given the image on the thread pool after).
    var keepsOriginalBytes: Bool { configuration.serializer is DefaultCacheSerializer }

    /// Stores bytes kept without an image — a data-only load's download, an encoded output — in the data store, as
    /// the serializer wraps them (on NIO's thread pool, unless it keeps bytes as they are).
    ///
    /// - Throws: what the data store throws, or ``CacheError/cacheWriteFailed(key:reason:)`` when the serializer
    ///   cannot wrap them.
    func storeData(
        _ bytes: [UInt8], forKey key: String, validators: HTTPValidators, expiration: CacheExpiration?
    ) async throws(CacheError) {
        let wrapped: [UInt8]
        if keepsOriginalBytes {
            wrapped = bytes
        } else {
            let serializer = configuration.serializer
            guard let serialized = try await serialized(forKey: key, { try serializer.wrap(bytes) }) else { return }
            wrapped = serialized
        }
        try await dataCache.storeData(wrapped, forKey: key, validators: validators, expiration: expiration)
    }

    /// Stages an original's bytes in the data store, as the serializer wraps them, and returns the write that
    /// finishes the store (see ``DataCaching/stageData(_:forKey:validators:expiration:)``).
    func stageData(
        _ bytes: [UInt8], forKey key: String, validators: HTTPValidators, expiration: CacheExpiration?
    ) -> DataWrite {
        do {
            let wrapped = try configuration.serializer.wrap(bytes)
            return dataCache.stageData(wrapped, forKey: key, validators: validators, expiration: expiration)
        } catch {
            let reason = "\(error)"
            return { () async throws(CacheError) in throw .cacheWriteFailed(key: key, reason: reason) }
        }
    }

    /// Puts `image` (or, when memory keeps bytes, `data`) in memory, until `expiration` (the memory level's own
    /// policy when `nil`).
    func storeInMemory(_ image: Image, data: [UInt8]?, forKey key: String, expiration: CacheExpiration? = nil) {
        guard configuration.storesInMemory else { return }
        if configuration.decodeImages {
            memoryCache.storeImage(image, forKey: key, expiration: expiration)
        } else if let data {
            memoryData.setValue(data, forKey: key, cost: data.count, expiration: expiration)
        }
    }

    // MARK: Extended data

    /// The extended data kept with `key`'s disk entry (see ``DataCaching/extendedData(forKey:)``); `nil` when it has
    /// none or there is no entry.
    public func extendedData(forKey key: String) async -> [UInt8]? {
        await dataCache.extendedData(forKey: key)
    }

    /// Replaces the extended data of `key`'s disk entry (`nil` removes it); returns whether there was an entry.
    @discardableResult
    public func setExtendedData(_ data: [UInt8]?, forKey key: String) async -> Bool {
        await dataCache.setExtendedData(data, forKey: key)
    }

    // MARK: Querying

    /// The decoded image in memory for `key`, at once; `nil` when memory keeps bytes only or has nothing.
    func imageInMemory(forKey key: String) -> Image? {
        guard configuration.storesInMemory, configuration.decodeImages else { return nil }
        return memoryCache.cachedImage(forKey: key)
    }

    /// The encoded image in memory for `key` (a key of ``ImageManager/cacheKey(for:as:)``), at once.
    public func encodedImage(forKey key: String) -> EncodedImage? {
        guard configuration.storesInMemory else { return nil }
        return encodedImages.value(forKey: key)
    }

    /// Keeps `encoded` in memory for `key`, until `expiration` (the memory level's policy when `nil`).
    func storeEncodedInMemory(_ encoded: EncodedImage, forKey key: String, expiration: CacheExpiration? = nil) {
        guard configuration.storesInMemory else { return }
        encodedImages.setValue(encoded, forKey: key, cost: encoded.bytes.count, expiration: expiration)
    }

    /// How many encoded images are in memory, and their bytes.
    public var encodedMemoryTotals: (count: Int, bytes: Int) { (encodedImages.count, encodedImages.totalCost) }

    /// The decoded source in memory for the base key `key`, when memory keeps decoded images.
    func decodedSource(forKey key: String) -> DecodedSource? {
        guard configuration.storesInMemory, configuration.decodeImages else { return nil }
        return decodedSources.value(forKey: key)
    }

    /// Keeps `source` in memory for the base key `key` until `expiration`, unless a larger decode of it is there.
    func storeDecodedSource(_ source: DecodedSource, forKey key: String, expiration: CacheExpiration? = nil) {
        guard configuration.storesInMemory, configuration.decodeImages else { return }
        decodedSources.setValue(source, forKey: key, cost: source.image.cost, expiration: expiration) { kept in
            kept.header == source.header && kept.size != source.size && kept.covers(source)
        }
    }

    /// The bytes in memory for `key` when memory keeps bytes (``Configuration/decodeImages`` off).
    func dataInMemory(forKey key: String) -> [UInt8]? {
        guard configuration.storesInMemory, !configuration.decodeImages else { return nil }
        return memoryData.value(forKey: key)
    }

    /// Stored bytes and where they were found.
    struct StoredData: Sendable {
        var bytes: [UInt8]
        var cacheType: CacheType
    }

    /// The image file stored for `key`: in memory when memory keeps bytes, else on the disk level, unwrapped by the
    /// serializer (bytes it cannot unwrap are a miss) — the one lookup of stored bytes. Blocks on the disk level's
    /// I/O: call it from a thread of its own (the manager's decoding threads), or use ``storedData(forKey:)-async``.
    func blockingStoredData(forKey key: String) -> StoredData? {
        if let bytes = dataInMemory(forKey: key) { return StoredData(bytes: bytes, cacheType: .memory) }
        return storedOnDisk(forKey: key)
    }

    /// ``blockingStoredData(forKey:)`` off the caller's task: a memory hit at once, the disk level on NIO's thread
    /// pool. `nil` on a miss or when the task is cancelled.
    func storedData(forKey key: String) async -> StoredData? {
        if let bytes = dataInMemory(forKey: key) { return StoredData(bytes: bytes, cacheType: .memory) }
        let found = try? await NIOThreadPool.singleton.runIfActive { self.storedOnDisk(forKey: key) }
        return found ?? nil
    }

    /// The image file the disk level keeps for `key`, unwrapped by the serializer; blocks on its I/O. For a key
    /// whose bytes memory cannot hold, or whose memory lookup was made already.
    func storedOnDisk(forKey key: String) -> StoredData? {
        guard let stored = dataCache.cachedData(forKey: key) else { return nil }
        return (try? configuration.serializer.unwrap(stored)).map { StoredData(bytes: $0, cacheType: .disk) }
    }

    /// The image for `key`: from memory, else from disk (read and decoded by the serializer with `decoding` off the
    /// caller's task, then put into memory); `nil` on a miss, or when the bytes on disk do not decode with
    /// `decoding`. (An ``ImageManager``'s loads decode with its own ``ImageManager/Configuration/decoding``: the
    /// cache has no registry of its own.)
    ///
    /// - Throws: `CancellationError` when the task is cancelled before the answer is ready.
    public func query(
        forKey key: String, decoding: DecodingOptions = DecodingOptions()
    ) async throws(CancellationError) -> Hit? {
        if let image = imageInMemory(forKey: key) { return Hit(image: image, data: nil, cacheType: .memory) }
        guard !Task.isCancelled else { throw CancellationError() }
        let (options, serializer) = (decoding, configuration.serializer)
        // The stored bytes' one lookup, and their decode, in one job on the thread pool.
        let found = try? await NIOThreadPool.singleton.runIfActive { () -> (StoredData, Image?)? in
            guard let stored = self.blockingStoredData(forKey: key) else { return nil }
            return (stored, try? serializer.image(from: stored.bytes, options: options))
        }
        guard !Task.isCancelled else { throw CancellationError() }
        guard let (stored, image) = found ?? nil, let image else { return nil }
        if stored.cacheType == .disk { storeInMemory(image, data: stored.bytes, forKey: key) }
        return Hit(image: image, data: stored.bytes, cacheType: stored.cacheType)
    }

    /// Whether `key` is in memory or on disk.
    public func isCached(forKey key: String) async -> Bool {
        isCachedInMemory(forKey: key) ? true : await isCachedOnDisk(forKey: key)
    }

    /// The keys among `keys` whose bytes are stored (in memory when memory keeps bytes, or in the data store): one
    /// look-up of the data store for all of them.
    public func keysWithStoredData(among keys: [String]) async -> Set<String> {
        let inMemory = Set(keys.filter { dataInMemory(forKey: $0) != nil })
        let rest = keys.filter { !inMemory.contains($0) }
        return inMemory.union(rest.isEmpty ? [] : await dataCache.containedKeys(among: rest))
    }

    /// Whether `key` is in memory.
    public func isCachedInMemory(forKey key: String) -> Bool {
        configuration.decodeImages ? memoryCache.containsImage(forKey: key) : memoryData.containsValue(forKey: key)
    }

    /// Whether `key` is on disk.
    public func isCachedOnDisk(forKey key: String) async -> Bool {
        await dataCache.containsData(forKey: key)
    }

    // MARK: Removing

    /// Removes `key` from memory and, with `fromDisk`, from disk.
    public func removeImage(forKey key: String, fromDisk: Bool = true) async {
        memoryCache.removeImage(forKey: key)
        memoryData.removeValue(forKey: key)
        decodedSources.removeValue(forKey: key)
        encodedImages.removeValue(forKey: key)
        if fromDisk {
            await dataCache.removeData(forKey: key)
        }
    }

    /// Empties the memory level.
    public func clearMemory() {
        memoryCache.removeAllImages()
        memoryData.removeAll()
        decodedSources.removeAll()
        encodedImages.removeAll()
    }

    /// Empties the disk level.
    public func clearDisk() async {
        await dataCache.removeAllData()
    }

    /// The disk level's entries, their total size in bytes and count, when its store can tell (a ``DiskCache`` does:
    /// one indexed row); `nil` otherwise.
    public func storedTotals() async -> (size: Int, count: Int)? {
        await dataCache.storedTotals()
    }

    /// Closes the disk level's store (``DataCaching/close()``: a ``DiskCache`` records its pending access times and
    /// leaves its directory complete for any reader), for a process about to exit.
    public func close() async {
        await dataCache.close()
    }

    /// Applies the disk level's limits now when it is a ``DiskCache``; returns what it removed.
    @discardableResult
    public func clean() async -> [DiskCache.Event] {
        await diskCache?.clean() ?? []
    }
}
