import Foundation
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// A store of bytes of a user's own: a dictionary, counting what the manager asks of it.
final class DictionaryDataCache: DataCaching {
    struct Entry {
        var bytes: [UInt8]
        var validators: HTTPValidators
        var expiration: CacheExpiration?
        var extendedData: [UInt8]?
    }

    let entries = Mutex<[String: Entry]>([:])
    let reads = Atomic<Int>(0)
    let writes = Atomic<Int>(0)
    /// When set, every store fails as a full disk would.
    let failsStores = Atomic<Bool>(false)

    func cachedData(forKey key: String) -> [UInt8]? {
        reads.wrappingAdd(1, ordering: .relaxed)
        return entries.withLock { $0[key]?.bytes }
    }

    func validators(forKey key: String) async -> HTTPValidators? {
        entries.withLock { $0[key]?.validators }
    }

    func storeData(
        _ data: [UInt8], forKey key: String, validators: HTTPValidators, expiration: CacheExpiration?
    ) async throws(CacheError) {
        guard !failsStores.load(ordering: .relaxed) else { throw .diskFull(key: key) }
        writes.wrappingAdd(1, ordering: .relaxed)
        entries.withLock { $0[key] = Entry(bytes: data, validators: validators, expiration: expiration) }
    }

    func extendedData(forKey key: String) async -> [UInt8]? {
        entries.withLock { $0[key]?.extendedData }
    }

    func setExtendedData(_ data: [UInt8]?, forKey key: String) async -> Bool {
        entries.withLock { entries in
            guard entries[key] != nil else { return false }
            entries[key]?.extendedData = data
            return true
        }
    }

    func removeData(forKey key: String) async {
        _ = entries.withLock { $0.removeValue(forKey: key) }
    }

    func containsData(forKey key: String) async -> Bool {
        entries.withLock { $0[key] != nil }
    }

    func removeAllData() async {
        entries.withLock { $0 = [:] }
    }

    var keys: Set<String> { entries.withLock { Set($0.keys) } }
}

/// A memory store of a user's own: a dictionary without limits.
final class DictionaryImageCache: ImageCaching {
    let images = Mutex<[String: Image]>([:])

    func cachedImage(forKey key: String) -> Image? { images.withLock { $0[key] } }
    func storeImage(_ image: Image, forKey key: String, expiration: CacheExpiration?) {
        images.withLock { $0[key] = image }
    }
    func removeImage(forKey key: String) { _ = images.withLock { $0.removeValue(forKey: key) } }
    func removeAllImages() { images.withLock { $0 = [:] } }
}

/// The manager talks to its caches only through `DataCaching` and `ImageCaching`: stores of the user's own work in
/// place of `DiskCache` and `MemoryCache`, for every kind of load.
@Suite("Cache seams", .timeLimit(.minutes(2)))
struct CacheSeamsTests {
    @Test("image, data and encoded loads read and write a plugged-in byte store and image store")
    func pluggedInStoresServeEveryLoad() async throws {
        try await withManager { harness in
            harness.server.route("/a.jpg", .ok(try ManagerFixtures.jpeg(width: 64, height: 48)))
            let url = harness.url("/a.jpg")
            let data = DictionaryDataCache()
            let images = DictionaryImageCache()
            var configuration = ImageManager.Configuration()
            configuration.storesProcessedImagesOnDisk = true
            let cache = ImageCache(memoryCache: images, dataCache: data)
            #expect(cache.diskCache == nil)
            let manager = ImageManager(cache: cache, downloader: harness.loader, configuration: configuration)

            // When an image is loaded, then loaded again
            let first = try await manager.image(for: url)
            await manager.waitForJobs()
            // Then the original went to the byte store and the image to the image store; the second is a memory hit
            #expect(first.cacheType == .notCached)
            let baseKey = manager.cacheKey(for: url)
            #expect(data.keys == [baseKey])
            #expect(images.cachedImage(forKey: baseKey) != nil)
            #expect(try await manager.image(for: url).cacheType == .memory)

            // When memory is emptied, an image load reads the byte store (the "disk"), not the origin
            images.removeAllImages()
            cache.clearMemory()
            let readsBefore = data.reads.load(ordering: .relaxed)
            #expect(try await manager.image(for: url).cacheType == .disk)
            #expect(data.reads.load(ordering: .relaxed) > readsBefore)
            // A data load is answered by it too
            let bytes = try await manager.data(for: try ImageRequest(url: url))
            #expect(bytes.cacheType == .disk)
            #expect(bytes.data == data.entries.withLock { $0[baseKey]?.bytes })

            // An encoded variant is written to it under the variant's key, and read back from it after memory goes
            let request = try ImageRequest(url: url, processors: [.downsample(width: 16)])
            let output = ImageOutput(.format(.webp))
            let encoded = try await manager.encodedImage(for: request, as: output)
            await manager.waitForJobs()
            let variantKey = manager.cacheKey(for: request, as: output)
            #expect(data.entries.withLock { $0[variantKey]?.bytes } == encoded.encoded.bytes)
            cache.clearMemory()
            #expect(try await manager.encodedImage(for: request, as: output).cacheType == .disk)
            #expect(harness.server.requestCount("/a.jpg") == 1)
            await manager.shutdown()
        }
    }

    @Test("a store that fails is reported as the load's disk outcome, with its error as a value")
    func aFailingStoreIsReported() async throws {
        try await withManager { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            let data = DictionaryDataCache()
            data.failsStores.store(true, ordering: .relaxed)
            let manager = ImageManager(
                cache: ImageCache(memoryCache: DictionaryImageCache(), dataCache: data), downloader: harness.loader)
            let loaded = try await manager.data(for: try ImageRequest(url: harness.url("/a.png")))
            #expect(loaded.diskStore == .failed(.diskFull(key: manager.cacheKey(for: harness.url("/a.png")))))
            let image = try await manager.image(
                for: try ImageRequest(url: harness.url("/a.png"), options: [.waitStoreCache, .fromLoaderOnly]))
            #expect(image.diskStore == .failed(.diskFull(key: manager.cacheKey(for: harness.url("/a.png")))))
            #expect(data.keys.isEmpty)
            await manager.shutdown()
        }
    }
}
