import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// A store is readable before its write ends, and a removal or a later store made meanwhile wins over that write.
/// The two halves of a store are driven one at a time here, through the internal seam the manager uses.
@Suite struct DiskCacheStagingTests {
    let temporary = TemporaryDirectory()
    let key = "https://example.com/staged.png"

    /// Entries kept in files (limit 0) or in the index (the default).
    static let storages = [0, DiskCache.Configuration().inlineSizeLimit]

    func makeCache(inlineSizeLimit: Int = DiskCache.Configuration().inlineSizeLimit) -> DiskCache {
        var configuration = DiskCache.Configuration(namespace: "staging")
        configuration.inlineSizeLimit = inlineSizeLimit
        configuration.baseDirectory = temporary.path
        configuration.cleaningInterval = nil
        return DiskCache(configuration: configuration, clock: TestClock())
    }

    var path: String { "osprey/staging/" + DiskCache.fileName(forKey: key) }

    /// The bytes written for the key, wherever the cache keeps them: its file, or its place in a pack.
    func written(in cache: DiskCache) -> [UInt8]? {
        if let file = temporary.contents(of: path) { return file }
        let name = DiskCache.fileName(forKey: key)
        guard
            let record = cache.withIndex({ index throws(SQLiteDatabase.Error) in try index.record(named: name) }) ?? nil
        else { return nil }
        return cache.packedBytes(of: record)
    }

    @Test(
        "a begun store reads back, with its entry, before anything is written; finishing it writes it",
        arguments: storages)
    func stagedStoreIsReadable(inlineSizeLimit: Int) async throws {
        let cache = makeCache(inlineSizeLimit: inlineSizeLimit)
        let bytes = DiskCacheTests.bytes(5_000)
        let pending = cache.beginStore(bytes, forKey: key, validators: .init(etag: "\"s\"", maxAge: .seconds(60)))

        #expect(cache.blockingData(forKey: key) == bytes)
        #expect(await cache.data(forKey: key) == bytes)
        #expect(await cache.containsData(forKey: key))
        let entry = try #require(await cache.entry(forKey: key))
        #expect(entry.size == 5_000 && entry.validators == .init(etag: "\"s\"", maxAge: .seconds(60)))
        #expect(written(in: cache) == nil)
        #expect(await cache.totals().count == 0)

        try await cache.finishStore(pending)

        #expect(written(in: cache) == bytes)
        #expect(await cache.entry(forKey: key)?.isInIndex == (inlineSizeLimit > 0))
        #expect(await cache.totals().count == 1)
        #expect(cache.state.withLock { $0.staged.isEmpty })
        #expect(await cache.data(forKey: key) == bytes)
    }

    @Test("of two stores in flight, the later one's bytes are kept, whichever write ends first", arguments: storages)
    func laterStoreWins(inlineSizeLimit: Int) async throws {
        for laterFinishesFirst in [true, false] {
            let cache = makeCache(inlineSizeLimit: inlineSizeLimit)
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

            #expect(written(in: cache) == DiskCacheTests.bytes(200, seed: 2))
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

        #expect(written(in: cache) == nil)
        #expect(await cache.data(forKey: key) == nil)
        #expect(await cache.totals().count == 0)
        #expect(FileSystemProbe.names(in: temporary.path + "/osprey/staging").allSatisfy { !$0.hasPrefix(".tmp-") })
    }
}
