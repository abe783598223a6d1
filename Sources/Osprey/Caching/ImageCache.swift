internal import NIOPosix
public import OspreyCodecs

/// The two cache levels together, with the seeds' operations (MISSION C5–C7, C11): decoded images in a
/// ``MemoryCache``, their encoded bytes in a ``DiskCache``.
///
/// ```swift
/// let cache = ImageCache(configuration: .init(namespace: "avatars"))
/// try await cache.store(image, data: bytes, forKey: url)
/// if let hit = try await cache.query(forKey: url) {
///     print(hit.cacheType)            // .memory, or .disk (decoded, and now in memory too)
/// }
/// ```
///
/// A disk hit is read and decoded in one job on NIO's thread pool, never on the caller's task. An image stored
/// without its bytes is encoded for the disk in its original format (PNG when it has alpha or its format is unknown).
public final class ImageCache: Sendable {
    /// What the cache keeps and where.
    public struct Configuration: Sendable {
        /// Whether images are kept in memory at all. `true` by default.
        public var storesInMemory = true
        /// Whether memory keeps decoded images (`true`, the default) or only their bytes, decoding on every query
        /// (the seeds' `shouldDecompressImages`).
        public var decodeImages = true
        /// The memory level's limits (cost is bytes of pixels, or of data without `decodeImages`).
        public var memory = MemoryCache<String, Image>.Configuration()
        /// The disk level's location and limits.
        public var disk = DiskCache.Configuration()
        /// How disk hits are decoded. Default options by default.
        public var decoding = DecodingOptions()
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

    /// Where a query found its image.
    public enum CacheType: Sendable, Equatable {
        case memory
        case disk
    }

    /// A query's answer: the image, its encoded bytes when known, and where it was found.
    public struct Hit: Sendable {
        /// The decoded image.
        public var image: Image
        /// The encoded bytes: always for a disk hit (animated images need them), for a memory hit when memory keeps
        /// bytes (`decodeImages` off).
        public var data: [UInt8]?
        /// Where it was found.
        public var cacheType: CacheType
    }

    /// The configuration it was made with.
    public let configuration: Configuration
    /// The memory level (decoded images), unless `decodeImages` is off.
    public let memoryCache: MemoryCache<String, Image>
    /// The memory level's bytes when `decodeImages` is off.
    private let dataCache: MemoryCache<String, [UInt8]>
    /// The disk level.
    public let diskCache: DiskCache
    /// Decoded sources, by base key, for the variants that follow.
    let decodedSources: MemoryCache<String, DecodedSource>
    /// Encoded variants, by their key.
    let encodedImages: MemoryCache<String, EncodedImage>

    /// Makes the two levels from `configuration`.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        let memory = configuration.memory
        self.memoryCache = MemoryCache(configuration: memory)
        self.dataCache = MemoryCache(configuration: Self.level(like: memory, costLimit: memory.costLimit))
        self.diskCache = DiskCache(configuration: configuration.disk)
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
        level.entryLifetime = memory.entryLifetime
        level.respondsToMemoryPressure = memory.respondsToMemoryPressure
        return level
    }

    // MARK: Storing

    /// Stores `image` for `key` in memory and, with `toDisk`, its bytes on disk: `data` when given, else the image
    /// encoded in its source format (PNG when it has alpha or no known format). `validators` (the origin's ETag,
    /// Last-Modified, max-age) are kept with the disk entry for revalidation.
    ///
    /// - Throws: ``OspreyError/diskFull(key:)`` or ``OspreyError/cacheWriteFailed(key:reason:)`` when the disk
    ///   write fails (the memory level is stored regardless).
    public func store(
        _ image: Image, data: [UInt8]? = nil, forKey key: String, toDisk: Bool = true,
        validators: HTTPValidators = HTTPValidators()
    ) async throws(OspreyError) {
        storeInMemory(image, data: data, forKey: key)
        guard toDisk else { return }
        try await storeOnDisk(image, data: data, forKey: key, validators: validators)
    }

    /// Stores on disk only: `data` when given, else `image` encoded with `coders` (the cache's decoding registry when
    /// `nil`; see ``store(_:data:forKey:toDisk:validators:)``).
    func storeOnDisk(
        _ image: Image, data: [UInt8]?, forKey key: String, validators: HTTPValidators,
        coders: ImageCoderRegistry? = nil
    ) async throws(OspreyError) {
        let bytes: [UInt8]
        if let data {
            bytes = data
        } else {
            var options = EncodingOptions()
            options.coders = coders ?? configuration.decoding.coders
            let format = Self.diskFormat(for: image, coders: options.coders)
            let encoded = try? await NIOThreadPool.singleton.runIfActive { [options] in
                Result { () throws(CodecError) in try ImageEncoder.encode(image, as: format, options: options) }
            }
            switch encoded {
            case .success(let encoded): bytes = encoded
            case .failure(let error): throw .cacheWriteFailed(key: key, reason: "\(error)")
            case nil: return
            }
        }
        try await diskCache.store(bytes, forKey: key, validators: validators)
    }

    /// The format an image stored without bytes is written in: its own, or PNG when it has alpha (JPEG would drop
    /// it), no known format, or one no encoder of `coders` writes.
    static func diskFormat(for image: Image, coders: ImageCoderRegistry) -> ImageFormat {
        switch image.sourceFormat {
        case .unknown: .png
        case .jpeg where image.pixelFormat.hasAlpha: .png
        case let format: coders.encoder(for: format) == nil ? .png : format
        }
    }

    /// Puts `image` (or, when memory keeps bytes, `data`) in memory.
    func storeInMemory(_ image: Image, data: [UInt8]?, forKey key: String) {
        guard configuration.storesInMemory else { return }
        if configuration.decodeImages {
            memoryCache.setValue(image, forKey: key, cost: image.cost)
        } else if let data {
            dataCache.setValue(data, forKey: key, cost: data.count)
        }
    }

    // MARK: Querying

    /// The decoded image in memory for `key`, at once; `nil` when memory keeps bytes only or has nothing.
    func imageInMemory(forKey key: String) -> Image? {
        guard configuration.storesInMemory, configuration.decodeImages else { return nil }
        return memoryCache.value(forKey: key)
    }

    /// The encoded image in memory for `key` (a key of ``ImageManager/cacheKey(for:as:)``), at once.
    public func encodedImage(forKey key: String) -> EncodedImage? {
        guard configuration.storesInMemory else { return nil }
        return encodedImages.value(forKey: key)
    }

    /// Keeps `encoded` in memory for `key`.
    func storeEncodedInMemory(_ encoded: EncodedImage, forKey key: String) {
        guard configuration.storesInMemory else { return }
        encodedImages.setValue(encoded, forKey: key, cost: encoded.bytes.count)
    }

    /// How many encoded images are in memory, and their bytes.
    public var encodedMemoryTotals: (count: Int, bytes: Int) { (encodedImages.count, encodedImages.totalCost) }

    /// The decoded source in memory for the base key `key`, when memory keeps decoded images.
    func decodedSource(forKey key: String) -> DecodedSource? {
        guard configuration.storesInMemory, configuration.decodeImages else { return nil }
        return decodedSources.value(forKey: key)
    }

    /// Keeps `source` in memory for the base key `key`, unless a larger decode of it is there.
    func storeDecodedSource(_ source: DecodedSource, forKey key: String) {
        guard configuration.storesInMemory, configuration.decodeImages else { return }
        if let kept = decodedSources.value(forKey: key), kept.header == source.header, kept.size != source.size,
            kept.covers(source)
        {
            return
        }
        decodedSources.setValue(source, forKey: key, cost: source.image.cost)
    }

    /// The bytes in memory for `key` when memory keeps bytes (``Configuration/decodeImages`` off).
    func dataInMemory(forKey key: String) -> [UInt8]? {
        guard configuration.storesInMemory, !configuration.decodeImages else { return nil }
        return dataCache.value(forKey: key)
    }

    /// The image for `key`: from memory, else from disk (read and decoded off the caller's task, then put into
    /// memory); `nil` on a miss, or when the bytes on disk do not decode with ``Configuration/decoding``.
    ///
    /// - Throws: `CancellationError` when the task is cancelled before the answer is ready.
    public func query(forKey key: String) async throws(CancellationError) -> Hit? {
        if configuration.storesInMemory {
            if configuration.decodeImages, let image = memoryCache.value(forKey: key) {
                return Hit(image: image, data: nil, cacheType: .memory)
            }
            if !configuration.decodeImages, let data = dataCache.value(forKey: key),
                let image = try await decode(data)
            {
                return Hit(image: image, data: data, cacheType: .memory)
            }
        }
        guard !Task.isCancelled else { throw CancellationError() }
        let options = configuration.decoding
        let diskCache = self.diskCache
        let found = try? await NIOThreadPool.singleton.runIfActive { () -> (bytes: [UInt8], image: Image?)? in
            guard let bytes = diskCache.blockingData(forKey: key) else { return nil }
            return (bytes, try? ImageDecoder.decode(bytes, options: options))
        }
        guard !Task.isCancelled else { throw CancellationError() }
        guard let found = found ?? nil, let image = found.image else { return nil }
        storeInMemory(image, data: found.bytes, forKey: key)
        return Hit(image: image, data: found.bytes, cacheType: .disk)
    }

    private func decode(_ data: [UInt8]) async throws(CancellationError) -> Image? {
        let options = configuration.decoding
        let image = try? await NIOThreadPool.singleton.runIfActive { try? ImageDecoder.decode(data, options: options) }
        guard !Task.isCancelled else { throw CancellationError() }
        return image ?? nil
    }

    /// Whether `key` is in memory or on disk.
    public func isCached(forKey key: String) async -> Bool {
        isCachedInMemory(forKey: key) ? true : await isCachedOnDisk(forKey: key)
    }

    /// Whether `key` is in memory.
    public func isCachedInMemory(forKey key: String) -> Bool {
        configuration.decodeImages ? memoryCache.containsValue(forKey: key) : dataCache.containsValue(forKey: key)
    }

    /// Whether `key` is on disk.
    public func isCachedOnDisk(forKey key: String) async -> Bool {
        await diskCache.containsData(forKey: key)
    }

    // MARK: Removing

    /// Removes `key` from memory and, with `fromDisk`, from disk.
    public func removeImage(forKey key: String, fromDisk: Bool = true) async {
        memoryCache.removeValue(forKey: key)
        dataCache.removeValue(forKey: key)
        decodedSources.removeValue(forKey: key)
        encodedImages.removeValue(forKey: key)
        if fromDisk {
            await diskCache.removeData(forKey: key)
        }
    }

    /// Empties the memory level.
    public func clearMemory() {
        memoryCache.removeAll()
        dataCache.removeAll()
        decodedSources.removeAll()
        encodedImages.removeAll()
    }

    /// Empties the disk level.
    public func clearDisk() async {
        await diskCache.removeAll()
    }

    /// Applies the disk level's limits now; returns what it removed.
    @discardableResult
    public func clean() async -> [DiskCache.Event] {
        await diskCache.clean()
    }
}
