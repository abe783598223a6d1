import Foundation
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

/// A serializer of a user's own that wraps what it keeps: every byte XORed, as a stand-in for encryption.
struct XORSerializer: CacheSerializer {
    static let mask: UInt8 = 0x5A

    func data(for image: Image, original: [UInt8]?, coders: ImageCoderRegistry) throws -> [UInt8] {
        let bytes = try original ?? DefaultCacheSerializer().data(for: image, original: nil, coders: coders)
        return bytes.map { $0 ^ Self.mask }
    }

    func image(from data: [UInt8], options: DecodingOptions) throws -> Image {
        try ImageDecoder.decode(data.map { $0 ^ Self.mask }, options: options)
    }
}

/// The caches' per-entry expirations, serializers and extended data as a user of Kingfisher or SDWebImage meets
/// them: public products only.
@Suite struct PublicAPICacheTests {
    /// Runs `body` with an origin serving a 40x30 JPEG at `/a.jpg`, and a manager whose cache, in a temporary
    /// directory, is configured by `configure`.
    static func withManager(
        configuration managerConfiguration: ImageManager.Configuration = ImageManager.Configuration(),
        _ configure: (inout ImageCache.Configuration) -> Void = { _ in },
        _ body: (_ server: OriginServer, _ manager: ImageManager, _ cache: ImageCache) async throws -> Void
    ) async throws {
        let directory = TemporaryDirectory()
        let jpeg = try Self.jpeg()
        try await withOriginServer { server in
            server.route("/a.jpg", .ok(jpeg, contentType: "image/jpeg"))
            var configuration = ImageCache.Configuration(namespace: "api-cache")
            configuration.disk.baseDirectory = directory.path
            configure(&configuration)
            let cache = ImageCache(configuration: configuration)
            try await withImageManager(cache: cache, configuration: managerConfiguration) { manager in
                try await body(server, manager, cache)
            }
        }
    }

    /// The origin's image: a 40x30 JPEG.
    static func jpeg() throws -> [UInt8] {
        try ImageEncoder.encode(ImageDecoder.decode(SyntheticImages.png(width: 40, height: 30)), as: .jpeg, quality: 90)
    }

    @Test("a request's expirations: memory keeps nothing already expired; the disk entry expires when it says")
    func requestExpirations() async throws {
        try await Self.withManager { server, manager, cache in
            // When an image is loaded with a memory expiration already past and a disk expiration of 3 days
            var request = try ImageRequest(string: server.url("/a.jpg"))
            request.memoryCacheExpiration = .date(UnixTime(seconds: 0))
            request.diskCacheExpiration = .days(3)
            let before = UnixTime.now
            _ = try await manager.image(for: request)

            // Then memory does not have it, the disk does, until 3 days from the store
            let key = manager.cacheKey(for: request)
            #expect(!cache.isCachedInMemory(forKey: key))
            let expiry = try #require(await cache.diskCache?.entry(forKey: key)?.cacheExpiry)
            #expect(expiry >= before.advanced(by: .seconds(3 * 86_400)))
            #expect(expiry <= UnixTime.now.advanced(by: .seconds(3 * 86_400)))
            // And the next load is a disk hit
            #expect(try await manager.image(for: request).cacheType == .disk)

            // And a request without expirations follows the caches' own: kept in memory, the disk's maximum age
            let plain = try ImageRequest(string: server.url("/a.jpg"), processors: [.resize(width: 20)])
            _ = try await manager.image(for: plain)
            #expect(cache.isCachedInMemory(forKey: manager.cacheKey(for: plain)))
        }
    }

    @Test("a serializer of the user's own wraps what the disk keeps, and reads it back for every disk hit")
    func customSerializer() async throws {
        var managerConfiguration = ImageManager.Configuration()
        managerConfiguration.storesProcessedImagesOnDisk = true
        try await Self.withManager(configuration: managerConfiguration, { $0.serializer = XORSerializer() }) {
            server, manager, cache in
            // When an image is loaded resized (the original and the variant are written to disk)
            let original = try ImageRequest(string: server.url("/a.jpg"))
            let resized = try ImageRequest(
                string: server.url("/a.jpg"), options: .waitStoreCache, processors: [.resize(width: 20)])
            _ = try await manager.image(for: resized)

            // Then what the disk keeps is the serializer's: the original's bytes and the variant's encoding, wrapped
            let keptOriginal = try #require(cache.dataCache.cachedData(forKey: manager.cacheKey(for: original)))
            #expect(keptOriginal.map { $0 ^ XORSerializer.mask } == (try Self.jpeg()))
            let keptVariant = try #require(cache.dataCache.cachedData(forKey: manager.cacheKey(for: resized)))
            #expect(ImageFormat(sniffing: keptVariant) == .unknown)
            #expect(ImageFormat(sniffing: keptVariant.map { $0 ^ XORSerializer.mask }) == .jpeg)

            // And from disk alone, both load through the serializer, as does the cache's own query
            cache.clearMemory()
            let again = try await manager.image(for: original)
            #expect(again.cacheType == .disk)
            #expect(again.image.width == 40 && again.image.height == 30)
            let variant = try await manager.image(for: resized)
            #expect(variant.cacheType == .disk)
            #expect(variant.image.width == 20 && variant.image.height == 15)
            cache.clearMemory()
            #expect(try await cache.query(forKey: manager.cacheKey(for: original))?.image.width == 40)
        }
    }

    @Test("a format serializer keeps every image in its format: processed variants keep their alpha as PNG")
    func formatSerializer() async throws {
        var managerConfiguration = ImageManager.Configuration()
        managerConfiguration.storesProcessedImagesOnDisk = true
        try await Self.withManager(
            configuration: managerConfiguration, { $0.serializer = FormatCacheSerializer(format: .png) }
        ) { server, manager, cache in
            // When an image is loaded with rounded corners (transparent outside them)
            let request = try ImageRequest(
                string: server.url("/a.jpg"), options: .waitStoreCache,
                processors: [.resize(width: 20), .roundCorners(radius: 6)])
            _ = try await manager.image(for: request)

            // Then the disk keeps the original and the variant as PNG, the variant with its alpha
            let originalKey = manager.cacheKey(for: try #require(URL(string: server.url("/a.jpg"))))
            let original = try #require(cache.dataCache.cachedData(forKey: originalKey))
            #expect(ImageFormat(sniffing: original) == .png)
            let variant = try #require(cache.dataCache.cachedData(forKey: manager.cacheKey(for: request)))
            #expect(ImageFormat(sniffing: variant) == .png)
            let decoded = try ImageDecoder.decode(variant)
            #expect(decoded.pixelFormat.hasAlpha)
            #expect(decoded.width == 20)
        }
    }

    @Test("extended data is kept with an image's disk entry, as SDWebImage's is")
    func extendedData() async throws {
        try await Self.withManager { server, manager, cache in
            // Given an image loaded and on disk
            let request = try ImageRequest(string: server.url("/a.jpg"), options: .waitStoreCache)
            _ = try await manager.image(for: request)
            let key = manager.cacheKey(for: request)

            // When extended data is set on its entry
            #expect(await cache.setExtendedData(Array(#"{"credit":"ada"}"#.utf8), forKey: key))

            // Then it reads back, and a key without an entry takes none
            #expect(await cache.extendedData(forKey: key) == Array(#"{"credit":"ada"}"#.utf8))
            #expect(await cache.setExtendedData([1], forKey: "absent") == false)
            #expect(await cache.extendedData(forKey: "absent") == nil)
        }
    }
}
