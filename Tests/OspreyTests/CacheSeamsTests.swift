import Foundation
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

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
            let readsBefore = data.readCount
            #expect(try await manager.image(for: url).cacheType == .disk)
            #expect(data.readCount > readsBefore)
            // A data load is answered by it too
            let bytes = try await manager.data(for: try ImageRequest(url: url))
            #expect(bytes.cacheType == .disk)
            #expect(bytes.data == data.bytes(forKey: baseKey))

            // An encoded variant is written to it under the variant's key, and read back from it after memory goes
            let request = try ImageRequest(url: url, processors: [.downsample(width: 16)])
            let output = ImageOutput(.format(.webp))
            let encoded = try await manager.encodedImage(for: request, as: output)
            await manager.waitForJobs()
            let variantKey = manager.cacheKey(for: request, as: output)
            #expect(data.bytes(forKey: variantKey) == encoded.encoded.bytes)
            cache.clearMemory()
            #expect(try await manager.encodedImage(for: request, as: output).cacheType == .disk)
            #expect(harness.server.requestCount("/a.jpg") == 1)
            await manager.shutdown()
        }
    }

    @Test("a cold load asks each store once per key and builds its keys once; an encoded one looks for no image")
    func aColdLoadAsksEachStoreOnce() async throws {
        try await withManager { harness in
            harness.server.route("/a.jpg", .ok(try ManagerFixtures.jpeg(width: 64, height: 48)))
            harness.server.route("/b.jpg", .ok(try ManagerFixtures.jpeg(width: 48, height: 64)))
            let data = DictionaryDataCache()
            let images = DictionaryImageCache()
            let keysMade = Mutex<[String: Int]>([:])
            var configuration = ImageManager.Configuration()
            configuration.storesProcessedImagesOnDisk = true
            configuration.cacheKeyFilter = { url in
                keysMade.withLock { $0[url.path, default: 0] += 1 }
                return url.absoluteString
            }
            let cache = ImageCache(memoryCache: images, dataCache: data)
            let manager = ImageManager(cache: cache, downloader: harness.loader, configuration: configuration)

            // When an encoded variant is loaded cold, as the proxy loads one
            let request = try ImageRequest(url: harness.url("/a.jpg"), processors: [.downsample(width: 16)])
            let output = ImageOutput(.format(.webp))
            #expect(try await manager.encodedImage(for: request, as: output).cacheType == .notCached)
            await manager.waitForJobs()
            // Then its keys were made once; the byte store was read once for the output and once for the source,
            // the encoded and decoded-source levels once each, and the image store not at all (an encoded load
            // neither keeps nor looks for its final image)
            #expect(keysMade.withLock { $0 } == ["/a.jpg": 1])
            let outputKey = manager.cacheKey(for: request, as: output)
            let baseKey = manager.cacheKey(for: harness.url("/a.jpg"))
            #expect(data.readsByKey == [outputKey: 1, baseKey: 1])
            #expect(data.keys == [outputKey, baseKey])
            #expect(cache.encodedImages.lookups == 1)
            #expect(cache.decodedSources.lookups == 1)
            #expect(images.lookupCount == 0)

            // When an image is loaded cold with processors (kept as a variant on disk)
            let sized = try ImageRequest(url: harness.url("/b.jpg"), processors: [.downsample(width: 16)])
            _ = try await manager.image(for: sized)
            await manager.waitForJobs()
            // Then memory was asked for the image once, the byte store once for the variant and once for the source,
            // and the keys were made once
            #expect(keysMade.withLock { $0["/b.jpg"] } == 1)
            let variantKey = manager.cacheKey(for: sized)
            let otherBase = manager.cacheKey(for: harness.url("/b.jpg"))
            #expect(images.lookupsByKey == [variantKey: 1])
            #expect((data.readsByKey[variantKey], data.readsByKey[otherBase]) == (1, 1))
            #expect(cache.decodedSources.lookups == 2)
            #expect(harness.server.requestCount() == 2)
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
