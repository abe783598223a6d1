import Foundation
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A settable wall clock for entry times.
final class ManualTime: Sendable {
    private let time = Mutex(UnixTime(seconds: 1_700_000_000))
    var now: UnixTime { time.withLock { $0 } }
    func advance(by duration: Duration) { time.withLock { $0 = $0.advanced(by: duration) } }
}

@Suite struct DiskCacheTests {
    let temporary = TemporaryDirectory()
    let time = ManualTime()

    func makeCache(
        namespace: String = "test", sizeLimit: Int = 1 << 30, maximumAge: Duration? = .seconds(7 * 24 * 3600),
        readOnly: [String] = [], inlineSizeLimit: Int = DiskCache.Configuration().inlineSizeLimit
    ) -> DiskCache {
        var configuration = DiskCache.Configuration(namespace: namespace)
        configuration.inlineSizeLimit = inlineSizeLimit
        configuration.baseDirectory = temporary.path
        configuration.sizeLimit = sizeLimit
        configuration.maximumAge = maximumAge
        configuration.cleaningInterval = nil
        configuration.readOnlyDirectories = readOnly
        let time = self.time
        return DiskCache(configuration: configuration, now: { time.now }, clock: TestClock())
    }

    static func bytes(_ count: Int, seed: UInt8 = 1) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    @Test("a stored entry reads back, under its hashed name with the URL's extension, atomically written")
    func storeAndRead() async throws {
        // Given an empty cache that keeps entries over 1 KB as files
        let cache = makeCache(inlineSizeLimit: 1024)
        let key = "https://example.com/photos/cat.JPG?width=300"

        // When bytes are stored under a URL key
        try await cache.store(Self.bytes(10_000), forKey: key, validators: .init(etag: "\"v1\"", maxAge: .seconds(60)))

        // Then they read back, from a file named SHA-256(key).jpg, with no temporary file left
        #expect(await cache.data(forKey: key) == Self.bytes(10_000))
        let name = DiskCache.fileName(forKey: key)
        #expect(name.hasSuffix(".jpg") && name.count == 64 + 4)
        #expect(temporary.contents(of: "osprey/test/" + name) == Self.bytes(10_000))
        #expect(FileSystemProbe.names(in: temporary.path + "/osprey/test").allSatisfy { !$0.hasPrefix(".tmp-") })
        // And the index knows its size, key and validators
        let entry = try #require(await cache.entry(forKey: key))
        #expect(entry.key == key)
        #expect(entry.size == 10_000)
        #expect(!entry.isInIndex)
        #expect(entry.validators == .init(etag: "\"v1\"", maxAge: .seconds(60)))
        #expect(await cache.totals() == (10_000, 1))
        #expect(await cache.totalSize == 10_000)
        #expect(await cache.count == 1)
        #expect(await cache.data(forKey: "https://example.com/other.jpg") == nil)
    }

    @Test("file names: SHA-256 hex plus a short, safe extension")
    func fileNames() {
        #expect(
            DiskCache.fileName(forKey: "abc")
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(DiskCache.fileName(forKey: "https://x.com/a/b.webp#frag").hasSuffix(".webp"))
        #expect(!DiskCache.fileName(forKey: "https://x.com/a/b.verylongext").contains("."))
        #expect(!DiskCache.fileName(forKey: "https://x.com/a.b/c").contains("."))
        #expect(!DiskCache.fileName(forKey: "https://x.com/a/b.j%70g").contains("."))
    }

    @Test("replacing an entry keeps the totals exact")
    func replacing() async throws {
        let cache = makeCache()
        try await cache.store(Self.bytes(100), forKey: "k")
        try await cache.store(Self.bytes(40, seed: 9), forKey: "k")
        #expect(await cache.data(forKey: "k") == Self.bytes(40, seed: 9))
        #expect(await cache.totals() == (40, 1))
    }

    @Test("containedKeys answers for many keys at once as a read would: stored, staged, not expired, none missing")
    func containedKeys() async throws {
        // Given 300 keys (three queries' worth), every third stored, one of them in a file, and one more only staged
        let cache = makeCache(maximumAge: .seconds(86_400), inlineSizeLimit: 1024)
        let keys = (0..<300).map { "https://example.com/\($0).jpg" }
        for (index, key) in keys.enumerated() where index % 3 == 0 {
            try await cache.store(Self.bytes(index == 0 ? 5_000 : 10), forKey: key)
        }
        let staged = cache.beginStore(Self.bytes(10), forKey: keys[1], validators: .init())

        // Then the stored and staged keys are found, and only they, in one answer
        let expected = Set(keys.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)).union([keys[1]])
        #expect(await cache.containedKeys(among: keys + ["https://example.com/never.jpg"]) == expected)
        #expect(await cache.containedKeys(among: []) == [])
        try await cache.finishStore(staged)

        // When keys[3] is read just before the maximum age, and a little later the others are past it
        time.advance(by: .seconds(86_400 - 10))
        #expect(await cache.containedKeys(among: [keys[0], keys[3]]) == [keys[0], keys[3]])
        _ = await cache.data(forKey: keys[3])
        time.advance(by: .seconds(20))
        // Then the entry not read for the maximum age counts as absent, as a read would find it
        #expect(await cache.containedKeys(among: [keys[0], keys[3]]) == [keys[3]])
        #expect(await cache.data(forKey: keys[0]) == nil)
    }

    @Test("entries not read for the maximum age are cleaned, and reported")
    func expiry() async throws {
        // Given two entries, one of which is read 5 days later
        let cache = makeCache(maximumAge: .seconds(7 * 86_400))
        let events = cache.events()
        try await cache.store(Self.bytes(10), forKey: "old")
        try await cache.store(Self.bytes(20), forKey: "read")
        time.advance(by: .seconds(5 * 86_400))
        #expect(await cache.data(forKey: "read") != nil)

        // When 3 more days pass and the cache is cleaned
        time.advance(by: .seconds(3 * 86_400))
        let removed = await cache.clean()

        // Then only the entry not read for 7 days is gone, and the event names it
        #expect(removed == [DiskCache.Event(reason: .expired, keys: ["old"], bytes: 10)])
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == DiskCache.Event(reason: .expired, keys: ["old"], bytes: 10))
        #expect(await cache.data(forKey: "old") == nil)
        #expect(await cache.data(forKey: "read") == Self.bytes(20))
        #expect(await cache.totals() == (20, 1))
    }

    @Test("over the size limit, least recently used entries go until the cache is under half the limit")
    func sizeLimit() async throws {
        // Given a 10,000-byte limit and ten 900-byte entries stored a second apart, the first one read last
        let cache = makeCache(sizeLimit: 10_000)
        for index in 0..<10 {
            try await cache.store(Self.bytes(900), forKey: "k\(index)")
            time.advance(by: .seconds(1))
        }
        time.advance(by: .seconds(2))  // past the access batch interval, so the read below reaches the index
        #expect(await cache.data(forKey: "k0") != nil)

        // When two more entries push it over the limit (which starts a cleaning), and it is cleaned on demand too
        let events = cache.events()
        try await cache.store(Self.bytes(900), forKey: "k10")
        try await cache.store(Self.bytes(900), forKey: "k11")
        await cache.clean()

        // Then the oldest unread entries went, down to at most 5,000 bytes, and k0 (read recently) stayed
        let totals = await cache.totals()
        #expect(totals.size <= 5_000)
        #expect(totals.size > 5_000 - 900)
        var removedKeys: [String] = []
        for await event in events {
            #expect(event.reason == .sizeLimit)
            removedKeys += event.keys
            if removedKeys.count >= 7 { break }
        }
        #expect(removedKeys == ["k1", "k2", "k3", "k4", "k5", "k6", "k7"])
        #expect(await cache.data(forKey: "k0") != nil)
        #expect(await cache.data(forKey: "k11") != nil)
    }

    @Test("a truncated or altered entry is a miss, and is removed", arguments: ["truncated", "altered", "deleted"])
    func damagedEntries(damage: String) async throws {
        // Given a stored entry whose file is then damaged behind the cache's back
        let cache = makeCache(inlineSizeLimit: 0)
        let events = cache.events()
        try await cache.store(Self.bytes(5_000), forKey: "k")
        let path = "osprey/test/" + DiskCache.fileName(forKey: "k")
        switch damage {
        case "truncated": temporary.write(Array(Self.bytes(5_000).prefix(4_000)), to: path)
        case "altered": temporary.write(Self.bytes(5_000, seed: 2), to: path)
        default: unlink(temporary.path + "/" + path)
        }

        // When it is read
        let data = await cache.data(forKey: "k")

        // Then it is a miss, the entry is gone from the index and the disk, and the removal is reported
        #expect(data == nil)
        #expect(await cache.totals() == (0, 0))
        #expect(temporary.contents(of: path) == nil)
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == DiskCache.Event(reason: .damaged, keys: ["k"], bytes: 5_000))
    }

    @Test("an entry damaged after this process has read and verified it is still caught", arguments: [true, false])
    func damagedAfterVerification(truncate: Bool) async throws {
        // Given an entry read once (so later reads skip the checksum while the file keeps its stamp)
        let cache = makeCache(inlineSizeLimit: 0)
        try await cache.store(Self.bytes(5_000), forKey: "k")
        #expect(await cache.data(forKey: "k") == Self.bytes(5_000))
        #expect(await cache.data(forKey: "k") == Self.bytes(5_000))

        // When the file is truncated, or rewritten in place at a later time
        let path = "osprey/test/" + DiskCache.fileName(forKey: "k")
        if truncate {
            temporary.write(Array(Self.bytes(5_000).prefix(100)), to: path)
        } else {
            temporary.write(Self.bytes(5_000, seed: 3), to: path)
            var times = [timespec(tv_sec: 2_000_000_000, tv_nsec: 0), timespec(tv_sec: 2_000_000_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, temporary.path + "/" + path, &times, 0) == 0)
        }

        // Then the next read is a miss and the entry is gone
        #expect(await cache.data(forKey: "k") == nil)
        #expect(await cache.totals() == (0, 0))
    }

    @Test("a lost index is rebuilt from the files, and a damaged one is replaced; entries kept in it are lost with it")
    func indexRebuild() async throws {
        // Given a cache with two entries in files and one in the index, closed
        do {
            let cache = makeCache(inlineSizeLimit: 100)
            try await cache.store(Self.bytes(300), forKey: "a")
            try await cache.store(Self.bytes(700), forKey: "b")
            try await cache.store(Self.bytes(50), forKey: "c")
            #expect(await cache.totals() == (1_050, 3))
        }
        let directory = temporary.path + "/osprey/test/"

        // When its index is deleted, the cache reopened
        for suffix in ["", "-wal", "-shm"] { unlink(directory + "index.sqlite" + suffix) }
        let rebuilt = makeCache()

        // Then both files are found again (keys unknown until stored again), and the small entry is a miss
        #expect(await rebuilt.totals() == (1_000, 2))
        #expect(await rebuilt.data(forKey: "a") == Self.bytes(300))
        #expect(await rebuilt.data(forKey: "c") == nil)
        #expect(Set(await rebuilt.allEntries().map(\.size)) == [300, 700])

        // And when the index is overwritten with garbage, the cache still opens and rebuilds
        for suffix in ["-wal", "-shm"] { unlink(directory + "index.sqlite" + suffix) }
        temporary.write(Array(repeating: 0x5A, count: 8192), to: "osprey/test/index.sqlite")
        let replaced = makeCache()
        #expect(await replaced.totals() == (1_000, 2))
        #expect(await replaced.data(forKey: "b") == Self.bytes(700))
    }

    @Test(
        "a cache directory deleted underneath the cache is recreated at the next store",
        arguments: [0, DiskCache.Configuration().inlineSizeLimit])
    func deletedDirectory(inlineSizeLimit: Int) async throws {
        let cache = makeCache(inlineSizeLimit: inlineSizeLimit)
        try await cache.store(Self.bytes(10), forKey: "a")
        FileSystemProbe.removeTree(temporary.path + "/osprey")

        try await cache.store(Self.bytes(20), forKey: "b")

        #expect(await cache.data(forKey: "b") == Self.bytes(20))
        #expect(await cache.data(forKey: "a") == nil)
        #expect(await cache.totals() == (20, 1))
        #expect(await cache.entry(forKey: "b")?.isInIndex == (inlineSizeLimit > 0))
    }

    @Test("300 stores at once (written in group commits): every entry reads back, replaced keys hold the last bytes")
    func concurrentStoresAreGroupCommitted() async throws {
        let cache = makeCache()
        // 250 keys, 50 of them stored twice (the second store of a key starts after the first has begun); sizes
        // on both sides of the inline limit.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<250 {
                let size = index % 5 == 0 ? 100_000 + index : 500 + index
                group.addTask { try await cache.store(Self.bytes(size, seed: 1), forKey: "key-\(index)") }
            }
            try await group.waitForAll()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<50 {
                group.addTask { try await cache.store(Self.bytes(700 + index, seed: 2), forKey: "key-\(index)") }
            }
            try await group.waitForAll()
        }
        for index in 0..<250 {
            let expected =
                index < 50
                ? Self.bytes(700 + index, seed: 2)
                : Self.bytes(index % 5 == 0 ? 100_000 + index : 500 + index, seed: 1)
            #expect(await cache.data(forKey: "key-\(index)") == expected, "key-\(index)")
        }
        let sizes = (0..<250).map { index in
            index < 50 ? 700 + index : index % 5 == 0 ? 100_000 + index : 500 + index
        }
        // Stores that waited while another batch was being written went in together: fewer commits than stores.
        #expect(cache.storeCommits.load(ordering: .relaxed) < 300)
        let totals = await cache.totals()
        #expect(totals.count == 250)
        #expect(totals.size == sizes.reduce(0, +))
        // No temporary file is left behind, each file entry is one file, and the small ones share one pack.
        let files = try FileManager.default.contentsOfDirectory(atPath: cache.configuration.directory)
        #expect(files.filter { $0.hasPrefix(".") || $0.hasSuffix(".tmp") }.isEmpty, "\(files)")
        #expect(
            files.filter { !$0.hasPrefix("index.sqlite") && !$0.hasPrefix("pack-") }.count
                == (50..<250).filter { $0 % 5 == 0 }.count)
        #expect(files.filter { $0.hasPrefix("pack-") } == ["pack-1"])
    }

    @Test("close() leaves the index complete for an immutable reader (a read-only copy), and no log beside it")
    func closeLeavesTheIndexCompleteForImmutableReaders() async throws {
        let cache = makeCache()
        for index in 0..<20 { try await cache.store(Self.bytes(100 + index), forKey: "key-\(index)") }
        let path = cache.configuration.directory + "/" + DiskCache.indexName
        // While the cache is open, the entries are in the log, which an immutable reader does not read.
        let before = try? DiskIndex(readingAt: path, immutable: true).totals()
        #expect(before == nil || before?.count == 0)

        await cache.close()
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        let after = try DiskIndex(readingAt: path, immutable: true).totals()
        #expect(after.count == 20)
        #expect(after.size == (0..<20).map { 100 + $0 }.reduce(0, +))
        // Closed, the cache stores nothing more and reads miss.
        try await cache.store(Self.bytes(10), forKey: "late")
        #expect(await cache.data(forKey: "late") == nil || cache.isMemoryOnly)
    }

    @Test("an entry stored as private is a miss for a shared cache on the same directory, in the index and in a file")
    func privateEntriesAreMissesForASharedCache() async throws {
        // Given a private cache that stored a private and a public entry, small (in the index) and large (a file)
        let privateCache = makeCache()
        for size in [100, 200_000] {
            try await privateCache.store(
                Self.bytes(size), forKey: "private-\(size)", validators: HTTPValidators(isPrivate: true))
            try await privateCache.store(Self.bytes(size), forKey: "public-\(size)")
        }
        #expect(await privateCache.entry(forKey: "private-100")?.validators.isPrivate == true)
        #expect(await privateCache.entry(forKey: "public-100")?.validators.isPrivate == false)

        // When a shared cache opens the same directory
        var configuration = privateCache.configuration
        configuration.isShared = true
        let shared = DiskCache(configuration: configuration, now: { [time] in time.now }, clock: TestClock())

        // Then it reads the public entries and misses the private ones, which stay for the private cache
        for size in [100, 200_000] {
            #expect(await shared.data(forKey: "public-\(size)") == Self.bytes(size))
            #expect(await shared.data(forKey: "private-\(size)") == nil)
            #expect(await privateCache.data(forKey: "private-\(size)") == Self.bytes(size))
        }
        #expect(await shared.totals().count == 4)
    }

    @Test("read-only directories are searched on a miss, and never written")
    func readOnlyDirectories() async throws {
        // Given a read-only directory holding an entry named as the cache names it
        let bundled = TemporaryDirectory()
        bundled.write(Self.bytes(64), to: DiskCache.fileName(forKey: "https://example.com/logo.png"))
        let cache = makeCache(readOnly: [bundled.path])

        // Then a lookup of that key finds it, and nothing is copied into the cache
        #expect(await cache.data(forKey: "https://example.com/logo.png") == Self.bytes(64))
        #expect(await cache.data(forKey: "https://example.com/other.png") == nil)
        #expect(await cache.totals() == (0, 0))
    }

    @Test("an unwritable directory makes the cache memory-only without errors")
    func unwritableDirectory() async throws {
        // Given a base directory this process cannot write to (skipped as root, who can write anywhere)
        guard geteuid() != 0 else {
            // Root ignores permissions; a path under a regular file cannot be created by anyone.
            temporary.write([1], to: "file")
            var configuration = DiskCache.Configuration(namespace: "x")
            configuration.baseDirectory = temporary.path + "/file"
            configuration.cleaningInterval = nil
            let cache = DiskCache(configuration: configuration)
            #expect(cache.isMemoryOnly)
            try await cache.store(Self.bytes(10), forKey: "k")
            #expect(await cache.data(forKey: "k") == nil)
            return
        }
        chmod(temporary.path, 0o555)
        defer { chmod(temporary.path, 0o755) }
        let cache = makeCache()
        #expect(cache.isMemoryOnly)
        try await cache.store(Self.bytes(10), forKey: "k")
        #expect(await cache.data(forKey: "k") == nil)
    }

    @Test(
        "a full disk fails the store with diskFull and keeps everything stored before",
        .enabled(if: geteuid() == 0, "mounting a small tmpfs needs root"),
        arguments: [0, DiskCache.Configuration().inlineSizeLimit]
    )
    func fullDisk(inlineSizeLimit: Int) async throws {
        // Given a cache on a 512 KiB tmpfs (the index itself takes a few pages)
        let mountPoint = temporary.path + "/small"
        mkdir(mountPoint, 0o755)
        let mounted = "size=512k".withCString { mount("tmpfs", mountPoint, "tmpfs", 0, $0) }
        try #require(mounted == 0, "mount: errno \(errno)")
        defer { umount(mountPoint) }
        var configuration = DiskCache.Configuration(namespace: "full")
        configuration.baseDirectory = mountPoint
        configuration.cleaningInterval = nil
        configuration.inlineSizeLimit = inlineSizeLimit
        let cache = DiskCache(configuration: configuration)

        // When 40 KB entries are stored until one fails
        var stored = 0
        var failure: CacheError?
        while stored < 20, failure == nil {
            do {
                try await cache.store(Self.bytes(40_000, seed: UInt8(stored)), forKey: "k\(stored)")
                stored += 1
            } catch {
                failure = error
            }
        }

        // Then the failure says the disk is full, and every entry stored before it reads back intact
        #expect(failure == .diskFull(key: "k\(stored)"))
        #expect(stored > 0)
        for index in 0..<stored {
            #expect(await cache.data(forKey: "k\(index)") == Self.bytes(40_000, seed: UInt8(index)))
        }
    }

    @Test(
        "a directory deleted from outside is noticed by the next read: a miss, size 0, and stores work again",
        arguments: [0, DiskCache.Configuration().inlineSizeLimit])
    func deletedDirectoryIsNoticedByReads(inlineSizeLimit: Int) async throws {
        // Given entries kept in the index (small) or as files
        let cache = makeCache(inlineSizeLimit: inlineSizeLimit)
        try await cache.store(Self.bytes(100), forKey: "small")
        try await cache.store(Self.bytes(100_000), forKey: "large")
        #expect(await cache.data(forKey: "small") == Self.bytes(100))

        // When the directory is removed from outside (`rm -r`), and the check interval has passed
        FileSystemProbe.removeTree(temporary.path + "/osprey")
        time.advance(by: .seconds(3))

        // Then reads miss and the size is 0, as if the cache had been cleared
        #expect(await cache.data(forKey: "small") == nil)
        #expect(await cache.data(forKey: "large") == nil)
        #expect(await cache.totals() == (0, 0))
        // And the cache starts afresh in a new directory
        try await cache.store(Self.bytes(50), forKey: "new")
        #expect(await cache.data(forKey: "new") == Self.bytes(50))
        #expect(await cache.count == 1)
        #expect(FileSystemProbe.names(in: temporary.path + "/osprey/test").contains(DiskCache.indexName))
    }

    @Test("a read-only cache reads what is there and writes nothing: no access times, no removals, stores fail")
    func readOnlyCache() async throws {
        let writer = makeCache()
        try await writer.store(Self.bytes(100), forKey: "a")
        var configuration = writer.configuration
        configuration.isReadOnly = true
        let time = self.time
        let reader = DiskCache(configuration: configuration, now: { time.now }, clock: TestClock())
        #expect(reader.isReadOnly && !reader.isMemoryOnly)
        let before = try #require(await writer.entry(forKey: "a"))
        time.advance(by: .seconds(60))
        #expect(await reader.data(forKey: "a") == Self.bytes(100))
        #expect(await reader.clean().isEmpty)
        await reader.removeData(forKey: "a")
        await #expect(throws: CacheError.self) { try await reader.store(Self.bytes(5), forKey: "b") }
        // The writer still has the entry, with its access time as it was
        #expect(await writer.entry(forKey: "a")?.lastAccess == before.lastAccess)
        #expect(await writer.data(forKey: "a") == Self.bytes(100))
        #expect(await writer.entry(forKey: "b") == nil)

        // Without an index there is nothing to read, and nothing is created
        var empty = DiskCache.Configuration(namespace: "never-made")
        empty.baseDirectory = temporary.path
        empty.isReadOnly = true
        #expect(await DiskCache(configuration: empty).count == 0)
        #expect(!FileSystemProbe.names(in: temporary.path + "/osprey").contains("never-made"))
    }

    @Test("the cache cleans itself every cleaning interval")
    func periodicCleaning() async throws {
        // Given a cache that cleans every minute on a test clock, with a maximum age of 10 s
        let clock = TestClock()
        var configuration = DiskCache.Configuration(namespace: "timer")
        configuration.baseDirectory = temporary.path
        configuration.maximumAge = .seconds(10)
        configuration.cleaningInterval = .seconds(60)
        let time = self.time
        let cache = DiskCache(configuration: configuration, now: { time.now }, clock: clock)
        let events = cache.events()
        try await cache.store(Self.bytes(10), forKey: "k")

        // When 20 s pass on the wall clock and a minute on the cleaning clock
        time.advance(by: .seconds(20))
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(60))

        // Then the entry is cleaned without anyone asking
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == DiskCache.Event(reason: .expired, keys: ["k"], bytes: 10))
        #expect(await cache.totals() == (0, 0))
    }

    @Test("removeData and removeAll delete entries and report them")
    func removing() async throws {
        let cache = makeCache(inlineSizeLimit: 15)
        let events = cache.events()
        try await cache.store(Self.bytes(10), forKey: "a")
        try await cache.store(Self.bytes(20), forKey: "b")
        try await cache.store(Self.bytes(30), forKey: "c")
        try await cache.store(Self.bytes(12), forKey: "d")
        await cache.removeData(forKey: "a")
        #expect(await cache.data(forKey: "a") == nil)
        await cache.removeAll()
        #expect(await cache.totals() == (0, 0))
        #expect(FileSystemProbe.names(in: temporary.path + "/osprey/test").allSatisfy { $0.hasPrefix("index.sqlite") })
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == DiskCache.Event(reason: .removed, keys: ["a"], bytes: 10))
        let second = await iterator.next()
        #expect(Set(second?.keys ?? []) == ["b", "c", "d"])
        #expect(cache.withIndex { index throws(SQLiteDatabase.Error) in try index.blobCount() } == 0)
    }
}
