import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// A store is readable before its write ends, and a removal or a later store made meanwhile wins over that write.
/// The two halves of a store are driven one at a time here, through the internal seam the manager uses.
@Suite struct DiskCacheStagingTests {
    let temporary = TemporaryDirectory()
    let key = "https://example.com/staged.png"

    func makeCache() -> DiskCache {
        var configuration = DiskCache.Configuration(namespace: "staging")
        configuration.baseDirectory = temporary.path
        configuration.cleaningInterval = nil
        return DiskCache(configuration: configuration, clock: TestClock())
    }

    var path: String { "osprey/staging/" + DiskCache.fileName(forKey: key) }

    @Test("a begun store reads back, with its entry, before anything is written; finishing it writes it")
    func stagedStoreIsReadable() async throws {
        let cache = makeCache()
        let bytes = DiskCacheTests.bytes(5_000)
        let pending = cache.beginStore(bytes, forKey: key, validators: .init(etag: "\"s\"", maxAge: .seconds(60)))

        #expect(cache.blockingData(forKey: key) == bytes)
        #expect(await cache.data(forKey: key) == bytes)
        #expect(await cache.containsData(forKey: key))
        let entry = try #require(await cache.entry(forKey: key))
        #expect(entry.size == 5_000 && entry.validators == .init(etag: "\"s\"", maxAge: .seconds(60)))
        #expect(temporary.contents(of: path) == nil)
        #expect(await cache.totals().count == 0)

        try await cache.finishStore(pending)

        #expect(temporary.contents(of: path) == bytes)
        #expect(await cache.totals().count == 1)
        #expect(cache.state.withLock { $0.staged.isEmpty })
        #expect(await cache.data(forKey: key) == bytes)
    }

    @Test("of two stores in flight, the later one's bytes are kept, whichever write ends first")
    func laterStoreWins() async throws {
        for laterFinishesFirst in [true, false] {
            let cache = makeCache()
            let first = cache.beginStore(DiskCacheTests.bytes(100, seed: 1), forKey: key, validators: .init())
            let second = cache.beginStore(DiskCacheTests.bytes(200, seed: 2), forKey: key, validators: .init())
            #expect(cache.blockingData(forKey: key) == DiskCacheTests.bytes(200, seed: 2))

            if laterFinishesFirst {
                try await cache.finishStore(second)
                try await cache.finishStore(first)
            } else {
                try await cache.finishStore(first)
                try await cache.finishStore(second)
            }

            #expect(temporary.contents(of: path) == DiskCacheTests.bytes(200, seed: 2))
            #expect(await cache.data(forKey: key) == DiskCacheTests.bytes(200, seed: 2))
            #expect(await cache.entry(forKey: key)?.size == 200)
            await cache.removeAll()
        }
    }

    @Test("a removal made while a store is in flight wins: the write that follows stores nothing")
    func removalWins() async throws {
        let cache = makeCache()
        try await cache.store(DiskCacheTests.bytes(300, seed: 3), forKey: key)
        let pending = cache.beginStore(DiskCacheTests.bytes(400, seed: 4), forKey: key, validators: .init())

        await cache.removeData(forKey: key)
        #expect(cache.blockingData(forKey: key) == nil)
        try await cache.finishStore(pending)

        #expect(temporary.contents(of: path) == nil)
        #expect(await cache.data(forKey: key) == nil)
        #expect(await cache.totals().count == 0)
        #expect(FileSystemProbe.names(in: temporary.path + "/osprey/staging").allSatisfy { !$0.hasPrefix(".tmp-") })
    }
}
