import OspreyTesting
import Testing

@testable import Osprey

/// Entries of at most ``DiskCache/Configuration/inlineSizeLimit`` bytes are kept inside the index, as blobs, instead
/// of a file each.
@Suite struct DiskCacheIndexStorageTests {
    let temporary = TemporaryDirectory()

    func makeCache(inlineSizeLimit: Int = 1024) -> DiskCache {
        var configuration = DiskCache.Configuration(namespace: "inline")
        configuration.baseDirectory = temporary.path
        configuration.cleaningInterval = nil
        configuration.inlineSizeLimit = inlineSizeLimit
        return DiskCache(configuration: configuration, clock: TestClock())
    }

    var directory: String { temporary.path + "/osprey/inline" }

    /// The files in the cache directory other than the index's own.
    var entryFiles: [String] { FileSystemProbe.names(in: directory).filter { !$0.hasPrefix("index.sqlite") } }

    func blobCount(_ cache: DiskCache) -> Int? {
        cache.withIndex { index throws(SQLiteDatabase.Error) in try index.blobCount() }
    }

    @Test("a small entry is kept in the index, and moves to a file and back as it is replaced, freeing what it left")
    func smallEntriesInTheIndex() async throws {
        // Given a cache that keeps entries of up to 1 KB in its index
        let cache = makeCache()
        let key = "https://example.com/icon.png"

        // When a 500-byte entry is stored, then replaced by another 500 bytes
        try await cache.store(DiskCacheTests.bytes(500), forKey: key, validators: .init(etag: "\"a\""))
        #expect(await cache.entry(forKey: key)?.isInIndex == true)
        try await cache.store(DiskCacheTests.bytes(500, seed: 2), forKey: key)

        // Then it reads back from the index, with no file of its own and one blob
        #expect(await cache.data(forKey: key) == DiskCacheTests.bytes(500, seed: 2))
        #expect(entryFiles.isEmpty)
        #expect(blobCount(cache) == 1)
        #expect(await cache.totals() == (500, 1))

        // When it is replaced by 5,000 bytes, it becomes a file and its blob is deleted
        try await cache.store(DiskCacheTests.bytes(5_000, seed: 3), forKey: key)
        #expect(await cache.data(forKey: key) == DiskCacheTests.bytes(5_000, seed: 3))
        #expect(entryFiles == [DiskCache.fileName(forKey: key)])
        #expect(blobCount(cache) == 0)
        #expect(await cache.entry(forKey: key)?.isInIndex == false)
        #expect(await cache.totals() == (5_000, 1))

        // And when replaced by 300 bytes again, the file is deleted
        try await cache.store(DiskCacheTests.bytes(300, seed: 4), forKey: key)
        #expect(await cache.data(forKey: key) == DiskCacheTests.bytes(300, seed: 4))
        #expect(entryFiles.isEmpty)
        #expect(blobCount(cache) == 1)
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

    @Test("entries in the index survive reopening, and size-limit cleaning deletes their blobs")
    func reopenAndClean() async throws {
        // Given 20 entries of 600 bytes stored and the cache closed
        do {
            let cache = makeCache()
            for index in 0..<20 {
                try await cache.store(DiskCacheTests.bytes(600, seed: UInt8(index)), forKey: "k\(index)")
            }
        }

        // When it is reopened with a 6,000-byte limit and cleaned
        var configuration = DiskCache.Configuration(namespace: "inline")
        configuration.baseDirectory = temporary.path
        configuration.cleaningInterval = nil
        configuration.inlineSizeLimit = 1024
        configuration.sizeLimit = 6_000
        let cache = DiskCache(configuration: configuration, clock: TestClock())
        #expect(await cache.data(forKey: "k19") == DiskCacheTests.bytes(600, seed: 19))
        await cache.clean()

        // Then it holds at most 3,000 bytes, one blob per entry left, and what is left reads back whole
        let totals = await cache.totals()
        #expect(totals.size <= 3_000 && totals.count == totals.size / 600)
        #expect(blobCount(cache) == totals.count)
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
        "an entry altered, cut short or lost inside the index is a miss, and is removed",
        arguments: ["altered", "truncated", "lost"])
    func damagedInIndex(damage: String) async throws {
        // Given an entry kept in the index
        let cache = makeCache()
        let events = cache.events()
        try await cache.store(DiskCacheTests.bytes(700), forKey: "k")
        #expect(await cache.data(forKey: "k") == DiskCacheTests.bytes(700))

        // When another connection damages its blob behind the cache's back
        let database = try SQLiteDatabase(path: directory + "/" + DiskCache.indexName)
        switch damage {
        case "altered": try database.query("UPDATE blobs SET data = ?", [.blob(DiskCacheTests.bytes(700, seed: 5))])
        case "truncated": try database.query("UPDATE blobs SET data = substr(data, 1, 600)")
        default: try database.query("DELETE FROM blobs")
        }

        // Then the next read is a miss, the entry is gone, and the removal is reported
        #expect(await cache.data(forKey: "k") == nil)
        #expect(await cache.totals() == (0, 0))
        #expect(blobCount(cache) == 0)
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == DiskCache.Event(reason: .damaged, keys: ["k"], bytes: 700))
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

        // Then the old entry reads back with its validators, without a rebuild, and a small entry goes into the index
        #expect(await cache.data(forKey: key) == DiskCacheTests.bytes(2_000))
        #expect(await cache.entry(forKey: key)?.validators.etag == "\"e\"")
        try await cache.store(DiskCacheTests.bytes(100), forKey: "small")
        #expect(await cache.data(forKey: "small") == DiskCacheTests.bytes(100))
        #expect(await cache.entry(forKey: "small")?.isInIndex == true)
        #expect(await cache.totals() == (2_100, 2))
        await cache.removeAll()
        #expect(blobCount(cache) == 0)
        #expect(entryFiles.isEmpty)
    }
}
