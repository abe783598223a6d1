import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@Suite struct ImageCacheTests {
    let temporary = TemporaryDirectory()

    func makeCache(decodeImages: Bool = true, storesInMemory: Bool = true) -> ImageCache {
        var configuration = ImageCache.Configuration(namespace: "images")
        configuration.disk.baseDirectory = temporary.path
        configuration.disk.cleaningInterval = nil
        configuration.memory.respondsToMemoryPressure = false
        configuration.decodeImages = decodeImages
        configuration.storesInMemory = storesInMemory
        return ImageCache(configuration: configuration)
    }

    /// A 6×4 PNG with alpha, and its decoded image.
    static let png = SyntheticImages.png(width: 6, height: 4)
    static var image: Image { get throws { try ImageDecoder.decode(png) } }

    @Test("a stored image comes from memory, then, after memory is cleared, from disk with its bytes")
    func memoryThenDisk() async throws {
        // Given an image stored with its bytes
        let cache = makeCache()
        try await cache.store(try Self.image, data: Self.png, forKey: "https://example.com/a.png")

        // When it is queried, then queried again after the memory level is cleared
        let first = try #require(try await cache.query(forKey: "https://example.com/a.png"))
        cache.clearMemory()
        #expect(!cache.isCachedInMemory(forKey: "https://example.com/a.png"))
        let second = try #require(try await cache.query(forKey: "https://example.com/a.png"))
        let third = try #require(try await cache.query(forKey: "https://example.com/a.png"))

        // Then the first hit is from memory, the second from disk (decoded, with the original bytes), and the disk
        // hit was put back into memory
        #expect(first.cacheType == .memory)
        #expect(second.cacheType == .disk)
        #expect(second.data == Self.png)
        #expect(second.image == (try Self.image))
        #expect(third.cacheType == .memory)
        #expect(try await cache.query(forKey: "https://example.com/missing.png") == nil)
    }

    @Test("an image stored without bytes is encoded in its format, or PNG when it has alpha or no format")
    func reencoding() async throws {
        let cache = makeCache()
        // A JPEG without alpha stays JPEG
        let opaque = try ImageDecoder.decode(
            try ImageEncoder.encode(try Image(pixels: PixelBuffer(width: 8, height: 8, format: .rgb8)), as: .jpeg))
        try await cache.store(opaque, forKey: "jpeg")
        // An image with alpha and no known format becomes PNG
        let unknown = Image(pixels: try PixelBuffer(width: 3, height: 3, format: .rgba8))
        try await cache.store(unknown, forKey: "unknown")

        let jpegBytes = try #require(await cache.diskCache!.data(forKey: "jpeg"))
        let pngBytes = try #require(await cache.diskCache!.data(forKey: "unknown"))
        #expect(ImageFormat(sniffing: jpegBytes) == .jpeg)
        #expect(ImageFormat(sniffing: pngBytes) == .png)
        #expect(try ImageDecoder.decode(pngBytes).pixels == unknown.pixels)
    }

    @Test("without decodeImages, memory keeps bytes and every query decodes them")
    func bytesOnlyInMemory() async throws {
        let cache = makeCache(decodeImages: false)
        try await cache.store(try Self.image, data: Self.png, forKey: "k", toDisk: false)
        #expect(!cache.memoryCache.containsImage(forKey: "k"))
        let hit = try #require(try await cache.query(forKey: "k"))
        #expect(hit.cacheType == .memory)
        #expect(hit.data == Self.png)
        #expect(hit.image == (try Self.image))
        #expect(!(await cache.isCachedOnDisk(forKey: "k")))
    }

    @Test("remove from memory only or from both; clear disk; isCached")
    func removing() async throws {
        let cache = makeCache()
        try await cache.store(try Self.image, data: Self.png, forKey: "k")
        #expect(await cache.isCached(forKey: "k"))
        await cache.removeImage(forKey: "k", fromDisk: false)
        #expect(!cache.isCachedInMemory(forKey: "k"))
        #expect(await cache.isCachedOnDisk(forKey: "k"))
        #expect(try await cache.query(forKey: "k")?.cacheType == .disk)
        await cache.removeImage(forKey: "k")
        #expect(!(await cache.isCached(forKey: "k")))
        try await cache.store(try Self.image, data: Self.png, forKey: "k2", toDisk: true)
        await cache.clearDisk()
        #expect(!(await cache.isCachedOnDisk(forKey: "k2")))
        #expect(cache.isCachedInMemory(forKey: "k2"))
    }

    @Test("storesInMemory off keeps nothing in memory")
    func diskOnly() async throws {
        let cache = makeCache(storesInMemory: false)
        try await cache.store(try Self.image, data: Self.png, forKey: "k")
        #expect(!cache.memoryCache.containsImage(forKey: "k"))
        #expect(try await cache.query(forKey: "k")?.cacheType == .disk)
        #expect(try await cache.query(forKey: "k")?.cacheType == .disk)
    }

    @Test("a cancelled query throws CancellationError")
    func cancellation() async throws {
        let cache = makeCache()
        try await cache.store(try Self.image, data: Self.png, forKey: "k")
        cache.clearMemory()
        let task = Task { () async throws -> ImageCache.Hit? in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await cache.query(forKey: "k")
        }
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
