import Crypto
import Foundation
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

/// A serializer of a user's own that wraps what it keeps: every byte XORed, as a stand-in for compression.
struct XORSerializer: CacheSerializer {
    static let mask: UInt8 = 0x5A

    func data(for image: Image, original: [UInt8]?, coders: ImageCoderRegistry) throws -> [UInt8] {
        try DefaultCacheSerializer().data(for: image, original: original, coders: coders)
    }

    func wrap(_ data: [UInt8]) throws -> [UInt8] { data.map { $0 ^ Self.mask } }
    func unwrap(_ data: [UInt8]) throws -> [UInt8] { data.map { $0 ^ Self.mask } }
}

/// A serializer that encrypts what the disk keeps with AES-GCM under a key of the user's.
struct SealingSerializer: CacheSerializer {
    let key = SymmetricKey(size: .bits256)

    func data(for image: Image, original: [UInt8]?, coders: ImageCoderRegistry) throws -> [UInt8] {
        try DefaultCacheSerializer().data(for: image, original: original, coders: coders)
    }

    func wrap(_ data: [UInt8]) throws -> [UInt8] {
        guard let sealed = try AES.GCM.seal(data, using: key).combined else { throw Refusal("no nonce") }
        return Array(sealed)
    }

    func unwrap(_ data: [UInt8]) throws -> [UInt8] {
        Array(try AES.GCM.open(AES.GCM.SealedBox(combined: data), using: key))
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
            cache.clearMemory()  // Else the variant is made from the original just decoded, in memory.
            let variant = try await manager.image(for: resized)
            #expect(variant.cacheType == .disk)
            #expect(variant.image.width == 20 && variant.image.height == 15)
            cache.clearMemory()
            #expect(try await cache.query(forKey: manager.cacheKey(for: original))?.image.width == 40)
        }
    }

    @Test("an encrypting serializer: no image byte in clear on disk after a prefetch, an encoded output, a variant")
    func encryptingSerializer() async throws {
        var managerConfiguration = ImageManager.Configuration()
        managerConfiguration.storesProcessedImagesOnDisk = true
        let directory = TemporaryDirectory()
        let jpeg = try Self.jpeg()
        let png = SyntheticImages.png(width: 24, height: 16)
        try await withOriginServer { server in
            server.route("/a.jpg", .ok(jpeg, contentType: "image/jpeg"))
            server.route("/b.png", .ok(png, contentType: "image/png"))
            server.route("/c.png", .ok(png, contentType: "image/png"))
            var configuration = ImageCache.Configuration(namespace: "sealed")
            configuration.disk.baseDirectory = directory.path
            configuration.serializer = SealingSerializer()
            let cache = ImageCache(configuration: configuration)
            try await withImageManager(cache: cache, configuration: managerConfiguration) { manager in
                // When two sources are prefetched to disk (bytes only, nothing decoded), one of them is encoded as
                // WebP, and a third is downloaded and resized: its original and variant stored on disk
                let urls = [server.url("/a.jpg"), server.url("/b.png"), server.url("/c.png")].compactMap(
                    URL.init(string:))
                let summary = await ImagePrefetcher(manager: manager).prefetch(Array(urls.prefix(2)))
                #expect(summary.finished == 2)
                let webp = try await manager.encodedImage(
                    for: try ImageRequest(url: urls[0], options: .waitStoreCache, processors: [.resize(width: 20)]),
                    as: ImageOutput(.format(.webp)))
                let resized = try ImageRequest(url: urls[2], options: .waitStoreCache, processors: [.resize(width: 12)])
                let variant = try await manager.image(for: resized)
                let variantFile = try ImageEncoder.encode(variant.image, as: .png)

                // Then no file under the cache holds any of the image files, or even their signatures, in clear
                let stored = await cache.diskCache?.totals().count
                #expect(stored == 5, "\(String(describing: stored)) entries")
                let clear = [jpeg, png, webp.encoded.bytes, variantFile].map { Array($0.prefix(64)) }
                let signatures: [[UInt8]] = [[0xFF, 0xD8, 0xFF], [0x89, 0x50, 0x4E, 0x47], Array("WEBPVP8".utf8)]
                var scanned = 0
                let files = FileManager.default.enumerator(atPath: directory.path)?.allObjects as? [String] ?? []
                for file in files {
                    let path = directory.path + "/" + file
                    guard let contents = FileManager.default.contents(atPath: path) else { continue }
                    scanned += contents.count
                    let bytes = [UInt8](contents)
                    let found = (clear + signatures).filter { Self.contains(bytes, $0) }.count
                    #expect(found == 0, "\(file) holds \(found) image files or signatures in clear")
                }
                #expect(scanned > jpeg.count + png.count)

                // And every kind reads back through the serializer from disk alone
                cache.clearMemory()
                let data = try await manager.data(for: try ImageRequest(url: urls[0]))
                #expect(data.cacheType == .disk && data.data == jpeg)
                let again = try await manager.encodedImage(
                    for: try ImageRequest(url: urls[0], processors: [.resize(width: 20)]),
                    as: ImageOutput(.format(.webp)))
                #expect(again.cacheType == .disk && again.encoded.bytes == webp.encoded.bytes)
                let variantAgain = try await manager.image(for: resized)
                #expect(variantAgain.cacheType == .disk && variantAgain.image.width == 12)
            }
        }
    }

    /// Whether `needle` occurs in `haystack`.
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start] == needle[0] && Array(haystack[start..<(start + needle.count)]) == needle
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
