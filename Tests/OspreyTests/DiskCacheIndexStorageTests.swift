import Foundation
import OspreyTesting
import Testing

@testable import Osprey

/// Entries of at most ``DiskCache/Configuration/inlineSizeLimit`` bytes are kept with the index, appended to its pack
/// files, instead of a file each.
@Suite struct DiskCacheIndexStorageTests {
    let temporary = TemporaryDirectory()

    /// A cache on the suite's directory that cleans only when asked, keeping entries of up to `inlineSizeLimit` bytes
    /// in packs, with the time `time` says (the wall clock's without one).
    func makeCache(
        inlineSizeLimit: Int = 1024, sizeLimit: Int = 1 << 30, time: ManualTime? = nil
    ) -> DiskCache {
        var configuration = DiskCache.Configuration(namespace: "inline")
        configuration.baseDirectory = temporary.path
        configuration.cleaningInterval = nil
        configuration.inlineSizeLimit = inlineSizeLimit
        configuration.sizeLimit = sizeLimit
        guard let time else { return DiskCache(configuration: configuration, clock: TestClock()) }
        return DiskCache(configuration: configuration, now: { time.now }, clock: TestClock())
    }

    var directory: String { temporary.path + "/osprey/inline" }

    /// The files in the cache directory other than the index's own and its packs.
    var entryFiles: [String] {
        FileSystemProbe.names(in: directory).filter { !$0.hasPrefix("index.sqlite") && !$0.hasPrefix("pack-") }
    }

    /// The pack files in the cache directory.
    var packFiles: [String] { FileSystemProbe.names(in: directory).filter { $0.hasPrefix("pack-") }.sorted() }

    func packs(_ cache: DiskCache) -> [DiskIndex.Pack]? {
        cache.withIndex { index throws(SQLiteDatabase.Error) in try index.packs() }
    }

    func blobCount(_ cache: DiskCache) -> Int? {
        cache.withIndex { index throws(SQLiteDatabase.Error) in try index.blobCount() }
    }

    @Test("a small entry is kept in a pack, and moves to a file and back as it is replaced, freeing what it left")
    func smallEntriesInTheIndex() async throws {
        // Given a cache that keeps entries of up to 1 KB in its index
        let cache = makeCache()
        let key = "https://example.com/icon.png"

        // When a 500-byte entry is stored, then replaced by another 500 bytes
        try await cache.store(DiskCacheTests.bytes(500), forKey: key, validators: .init(etag: "\"a\""))
        #expect(await cache.entry(forKey: key)?.isInIndex == true)
        try await cache.store(DiskCacheTests.bytes(500, seed: 2), forKey: key)

        // Then it reads back from a pack, with no file of its own; the pack holds both writes, one of them in use
        #expect(await cache.data(forKey: key) == DiskCacheTests.bytes(500, seed: 2))
        #expect(entryFiles.isEmpty)
        #expect(packs(cache)?.map { [$0.length, $0.live] } == [[1_000, 500]])
        #expect(packFiles == ["pack-1"])
        #expect(await cache.totals() == (500, 1))

        // When it is replaced by 5,000 bytes, it becomes a file, and the pack it emptied is deleted
        try await cache.store(DiskCacheTests.bytes(5_000, seed: 3), forKey: key)
        #expect(await cache.data(forKey: key) == DiskCacheTests.bytes(5_000, seed: 3))
        #expect(entryFiles == [DiskCache.fileName(forKey: key)])
        #expect(packs(cache) == [])
        #expect(packFiles.isEmpty)
        #expect(await cache.entry(forKey: key)?.isInIndex == false)
        #expect(await cache.totals() == (5_000, 1))

        // And when replaced by 300 bytes again, the file is deleted and a new pack begun
        try await cache.store(DiskCacheTests.bytes(300, seed: 4), forKey: key)
        #expect(await cache.data(forKey: key) == DiskCacheTests.bytes(300, seed: 4))
        #expect(entryFiles.isEmpty)
        #expect(packs(cache)?.map { [Int($0.id), $0.length, $0.live] } == [[2, 300, 300]])
        #expect(packFiles == ["pack-2"])
        #expect(await cache.totals() == (300, 1))

        // And an empty entry is an empty hit, not a miss
        try await cache.store([], forKey: "empty")
        #expect(await cache.data(forKey: "empty") == [])
        #expect(await cache.totals() == (300, 2))
    }

    @Test("a limit of 0 keeps every entry in a file, even an empty one; none over 16 MiB goes into the index")
    func limits() async throws {
        let files = makeCache(inlineSizeLimit: 0)
        try await files.store([], forKey: "empty")
        try await files.store(DiskCacheTests.bytes(10), forKey: "tiny")
        #expect(await files.entry(forKey: "empty")?.isInIndex == false)
        #expect(await files.entry(forKey: "tiny")?.isInIndex == false)
        #expect(await files.data(forKey: "empty") == [])
        #expect(entryFiles.count == 2)

        let unbounded = makeCache(inlineSizeLimit: .max)
        let large = DiskCacheTests.bytes(16 << 20 + 1)
        try await unbounded.store(large, forKey: "large")
        try await unbounded.store(DiskCacheTests.bytes(1 << 20), forKey: "megabyte")
        #expect(await unbounded.entry(forKey: "large")?.isInIndex == false)
        #expect(await unbounded.entry(forKey: "megabyte")?.isInIndex == true)
        #expect(await unbounded.data(forKey: "large") == large)
        #expect(await unbounded.data(forKey: "megabyte") == DiskCacheTests.bytes(1 << 20))
    }

    @Test("entries in packs survive reopening, and size-limit cleaning frees their bytes")
    func reopenAndClean() async throws {
        // Given 20 entries of 600 bytes stored and the cache closed
        do {
            let cache = makeCache()
            for index in 0..<20 {
                try await cache.store(DiskCacheTests.bytes(600, seed: UInt8(index)), forKey: "k\(index)")
            }
        }

        // When it is reopened with a 6,000-byte limit and cleaned
        let cache = makeCache(sizeLimit: 6_000)
        #expect(await cache.data(forKey: "k19") == DiskCacheTests.bytes(600, seed: 19))
        await cache.clean()

        // Then it holds at most 3,000 bytes, its one pack holds those and no more (the cleaning moved what was left
        // into a new pack and deleted the old one), and what is left reads back whole
        let totals = await cache.totals()
        #expect(totals.size <= 3_000 && totals.count == totals.size / 600)
        #expect(packs(cache)?.map { [$0.length, $0.live] } == [[totals.size, totals.size]])
        #expect(packFiles == ["pack-2"])
        var present = 0
        for index in 0..<20 {
            if let bytes = await cache.data(forKey: "k\(index)") {
                #expect(bytes == DiskCacheTests.bytes(600, seed: UInt8(index)))
                present += 1
            }
        }
        #expect(present == totals.count)
        #expect(entryFiles.isEmpty)
    }

    @Test(
        "an entry altered, cut short or lost in its pack is a miss, and is removed with the pack it emptied",
        arguments: ["altered", "truncated", "lost"])
    func damagedInPack(damage: String) async throws {
        // Given an entry kept in a pack, read once (the cache keeps the pack open)
        let time = ManualTime()
        let cache = makeCache(time: time)
        let events = cache.events()
        try await cache.store(DiskCacheTests.bytes(700), forKey: "k")
        #expect(await cache.data(forKey: "k") == DiskCacheTests.bytes(700))

        // When its pack is damaged in place, or deleted, behind the cache's back (a deleted one is noticed when the
        // index check comes due, at most every 2 s: until then the open pack still reads)
        let pack = directory + "/pack-1"
        switch damage {
        case "altered":
            let handle = try #require(FileHandle(forWritingAtPath: pack))
            handle.write(Data(DiskCacheTests.bytes(700, seed: 5)))
            handle.closeFile()
        case "truncated":
            #expect(truncate(pack, 600) == 0)
        default:
            FileSystem.remove(pack)
            time.advance(by: .seconds(3))
        }

        // Then the next read is a miss, the entry and its pack are gone, and the removal is reported
        let read = await cache.data(forKey: "k")
        #expect(read == nil)
        #expect(await cache.totals() == (0, 0))
        #expect(packs(cache) == [])
        #expect(packFiles.isEmpty)
        guard read == nil else { return }  // no event to wait for
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == DiskCache.Event(reason: .damaged, keys: ["k"], bytes: 700))
    }

    @Test("an entry an older index keeps as a blob reads back, and leaves with its blob")
    func blobsOfAnOlderIndex() async throws {
        // Given an entry that an index written before the pack files holds in its blobs table
        let cache = makeCache()
        #expect(await cache.totals() == (0, 0))  // opens the index
        let name = DiskCache.fileName(forKey: "old")
        let bytes = DiskCacheTests.bytes(800)
        _ = cache.withIndex { index throws(SQLiteDatabase.Error) in
            try index.transaction { () throws(SQLiteDatabase.Error) in
                let blob = try index.insertBlob(bytes)
                try index.upsert(
                    DiskIndex.Record(
                        name: name, key: "old", size: bytes.count, checksum: bytes.withUnsafeBytes(DiskCache.checksum),
                        created: cache.now().seconds, accessed: cache.now().seconds, blob: blob),
                    extendedData: nil)
            }
        }

        // Then it reads back, counts as kept with the index, and replacing it deletes the blob
        #expect(await cache.data(forKey: "old") == bytes)
        #expect(await cache.entry(forKey: "old")?.isInIndex == true)
        try await cache.store(DiskCacheTests.bytes(900), forKey: "old")
        #expect(await cache.data(forKey: "old") == DiskCacheTests.bytes(900))
        #expect(blobCount(cache) == 0)
    }

    @Test("a pack grows to an eighth of the size limit, then the next begins; cleaning compacts the emptied ones")
    func packsRollOverAndCompact() async throws {
        // Given a cache of 2 MB (packs of 256 KiB) and 40 entries of 20,000 bytes: 800 KB in four packs
        let cache = makeCache(inlineSizeLimit: DiskCache.Configuration().inlineSizeLimit, sizeLimit: 2_000_000)
        for index in 0..<40 {
            try await cache.store(DiskCacheTests.bytes(20_000, seed: UInt8(index)), forKey: "k\(index)")
        }
        #expect(packs(cache)?.map(\.length) == [260_000, 260_000, 260_000, 20_000])
        #expect(packFiles == ["pack-1", "pack-2", "pack-3", "pack-4"])

        // When the first 20 are removed (the first pack emptied, the second left with 6 of its 13) and it is cleaned
        for index in 0..<20 { await cache.removeData(forKey: "k\(index)") }
        #expect(packs(cache)?.map { [Int($0.id), $0.live] } == [[2, 120_000], [3, 260_000], [4, 20_000]])
        await cache.clean()

        // Then the second pack's entries moved to the newest and it is gone; nothing was lost or left behind
        #expect(
            packs(cache)?.map { [Int($0.id), $0.length, $0.live] } == [[3, 260_000, 260_000], [4, 140_000, 140_000]])
        #expect(packFiles == ["pack-3", "pack-4"])
        for index in 20..<40 {
            #expect(await cache.data(forKey: "k\(index)") == DiskCacheTests.bytes(20_000, seed: UInt8(index)))
        }
        #expect(await cache.totals() == (400_000, 20))
    }

    @Test("what packs keep for replaced entries counts towards the size limit, and the cleaning it starts frees it")
    func replacedBytesCountTowardsTheLimit() async throws {
        // Given a 300 KB cache whose 20 entries of 5,000 bytes are each replaced five times (500 KB written)
        let cache = makeCache(inlineSizeLimit: DiskCache.Configuration().inlineSizeLimit, sizeLimit: 300_000)
        var largest = 0
        for round in 0..<5 {
            for index in 0..<20 {
                let pending = cache.beginStore(
                    DiskCacheTests.bytes(5_000, seed: UInt8(round * 20 + index)), forKey: "k\(index)",
                    validators: .init())
                let results = await withCheckedContinuation { continuation in
                    DispatchQueue.global().async { continuation.resume(returning: cache.saveBatch([pending])) }
                }
                cache.unstage(DiskCache.fileName(forKey: "k\(index)"), generation: pending.generation ?? 0)
                largest = max(largest, try results[0].get())
            }
        }

        // Then the writes reported the bytes on disk, entries and replaced ones together: past the limit (which would
        // have started a cleaning), where the entries alone never were
        #expect(await cache.totals() == (100_000, 20))
        #expect(largest > 300_000)

        // And a cleaning leaves the entries whole, and the packs holding no more for replaced ones than the entries take
        await cache.clean()
        #expect(await cache.totals() == (100_000, 20))
        let dead = try #require(cache.withIndex { index throws(SQLiteDatabase.Error) in try index.deadPackBytes() })
        #expect(dead <= 100_000)
        for index in 0..<20 {
            #expect(await cache.data(forKey: "k\(index)") == DiskCacheTests.bytes(5_000, seed: UInt8(80 + index)))
        }
    }

    @Test("what a writer left past a pack's recorded end is written over, and pack files the index lost are deleted")
    func leftoversAreWrittenOverOrDeleted() async throws {
        // Given an entry in pack 1, bytes a crashed writer left after it, and a pack file no index lists
        do {
            let cache = makeCache()
            try await cache.store(DiskCacheTests.bytes(100), forKey: "a")
        }
        let handle = try #require(FileHandle(forWritingAtPath: directory + "/pack-1"))
        handle.seekToEndOfFile()
        handle.write(Data(DiskCacheTests.bytes(50, seed: 9)))
        handle.closeFile()
        temporary.write(DiskCacheTests.bytes(10), to: "osprey/inline/pack-7")

        // When the cache stores another entry
        let cache = makeCache()
        try await cache.store(DiskCacheTests.bytes(200, seed: 2), forKey: "b")

        // Then it went where the recorded end was, and both read back
        #expect(packs(cache)?.map { [$0.length, $0.live] } == [[300, 300]])
        #expect(await cache.data(forKey: "a") == DiskCacheTests.bytes(100))
        #expect(await cache.data(forKey: "b") == DiskCacheTests.bytes(200, seed: 2))

        // And when the index is lost, reopening deletes every pack (their entries went with it)
        FileSystem.remove(directory + "/" + DiskCache.indexName)
        for suffix in ["-wal", "-shm"] { FileSystem.remove(directory + "/" + DiskCache.indexName + suffix) }
        let reopened = makeCache()
        #expect(await reopened.data(forKey: "a") == nil)
        #expect(packFiles.isEmpty)
    }

    @Test("a pack file replaced under a descriptor the cache keeps open is read afresh, not taken for damage")
    func keptDescriptorOfAReplacedPack() async throws {
        // Given an entry read once from pack 1 (whose descriptor the cache keeps)
        let cache = makeCache()
        try await cache.store(DiskCacheTests.bytes(400), forKey: "k")
        #expect(await cache.data(forKey: "k") == DiskCacheTests.bytes(400))

        // When pack 1 is deleted and a new file of that name holds other bytes, which the row now describes (as when
        // another process rebuilt a lost index and its first pack took the id)
        let replacement = DiskCacheTests.bytes(400, seed: 8)
        FileSystem.remove(directory + "/pack-1")
        temporary.write(replacement, to: "osprey/inline/pack-1")
        let name = DiskCache.fileName(forKey: "k")
        var record = try #require(
            cache.withIndex { index throws(SQLiteDatabase.Error) in try index.record(named: name) } ?? nil)
        record.checksum = replacement.withUnsafeBytes(DiskCache.checksum)
        _ = cache.withIndex { [record] index throws(SQLiteDatabase.Error) in
            try index.transaction { () throws(SQLiteDatabase.Error) in try index.upsert(record, extendedData: nil) }
        }

        // Then the read goes to the new file: the new bytes, and the entry is kept
        #expect(await cache.data(forKey: "k") == replacement)
        #expect(await cache.totals() == (400, 1))
    }

    @Test("the descriptor of a pack deleted from outside is closed at the next index check, freeing its space")
    func deletedPacksAreClosed() async throws {
        // Given an entry read from pack 1, whose descriptor the cache keeps
        let time = ManualTime()
        let cache = makeCache(time: time)
        try await cache.store(DiskCacheTests.bytes(400), forKey: "k")
        #expect(await cache.data(forKey: "k") == DiskCacheTests.bytes(400))
        let pack = directory + "/pack-1"
        #expect(Self.openDescriptors(of: pack) == 1)

        // When another process deletes the pack, and the index check comes due (at most every 2 s)
        FileSystem.remove(pack)
        #expect(Self.openDescriptors(of: pack + " (deleted)") == 1)
        time.advance(by: .seconds(3))
        _ = await cache.data(forKey: "other")

        // Then the cache no longer holds it open
        #expect(Self.openDescriptors(of: pack + " (deleted)") == 0)
    }

    /// How many of this process's descriptors name `path` (as /proc/self/fd shows them).
    static func openDescriptors(of path: String) -> Int {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == path
        }.count
    }

    @Test("an index written before entries could be kept in it is upgraded in place, its entries kept")
    func upgradesAnOlderIndex() async throws {
        // Given a directory holding one entry file and an index in the earlier format, which lists it
        let key = "https://example.com/old.jpg"
        let name = DiskCache.fileName(forKey: key)
        try FileSystem.createDirectory(directory)
        temporary.write(DiskCacheTests.bytes(2_000), to: "osprey/inline/" + name)
        do {
            let database = try SQLiteDatabase(path: directory + "/" + DiskCache.indexName)
            try database.execute(
                """
                PRAGMA journal_mode=WAL;
                CREATE TABLE entries(
                    name TEXT PRIMARY KEY, key TEXT, size INTEGER NOT NULL, checksum INTEGER,
                    created REAL NOT NULL, accessed REAL NOT NULL, expires REAL, etag TEXT, last_modified TEXT
                ) WITHOUT ROWID;
                CREATE INDEX entries_by_access ON entries(accessed);
                CREATE TABLE totals(
                    id INTEGER PRIMARY KEY CHECK (id = 0), size INTEGER NOT NULL, count INTEGER NOT NULL);
                INSERT INTO totals VALUES (0, 0, 0);
                CREATE TRIGGER entries_inserted AFTER INSERT ON entries
                    BEGIN UPDATE totals SET size = size + NEW.size, count = count + 1; END;
                CREATE TRIGGER entries_deleted AFTER DELETE ON entries
                    BEGIN UPDATE totals SET size = size - OLD.size, count = count - 1; END;
                CREATE TRIGGER entries_resized AFTER UPDATE OF size ON entries
                    BEGIN UPDATE totals SET size = size - OLD.size + NEW.size; END;
                """)
            let checksum = DiskCacheTests.bytes(2_000).withUnsafeBytes(DiskCache.checksum)
            let now = UnixTime.now.seconds
            try database.query(
                "INSERT INTO entries VALUES (?, ?, 2000, ?, ?, ?, NULL, '\"e\"', NULL)",
                [.text(name), .text(key), .integer(Int64(checksum)), .real(now), .real(now)])
        }

        // When the cache opens it
        let cache = makeCache()

        // Then the old entry reads back with its validators, without a rebuild, and a small entry goes into a pack
        #expect(await cache.data(forKey: key) == DiskCacheTests.bytes(2_000))
        #expect(await cache.entry(forKey: key)?.validators.etag == "\"e\"")
        try await cache.store(DiskCacheTests.bytes(100), forKey: "small")
        #expect(await cache.data(forKey: "small") == DiskCacheTests.bytes(100))
        #expect(await cache.entry(forKey: "small")?.isInIndex == true)
        #expect(await cache.totals() == (2_100, 2))
        await cache.removeAll()
        #expect(packs(cache) == [])
        #expect(entryFiles.isEmpty)
        #expect(packFiles.isEmpty)
    }
}
