import Foundation
import OspreyTesting
import Testing

@testable import Osprey

/// Per-entry expiration and extended data on disk: what a store names is kept in the index, survives a reopen,
/// is applied on reads and by cleaning.
@Suite struct DiskCacheExpirationTests {
    let temporary = TemporaryDirectory()
    let time = ManualTime()

    func makeCache(maximumAge: Duration? = .seconds(3_600), inlineSizeLimit: Int = 1024) -> DiskCache {
        var configuration = DiskCache.Configuration(namespace: "expiration")
        configuration.baseDirectory = temporary.path
        configuration.maximumAge = maximumAge
        configuration.inlineSizeLimit = inlineSizeLimit
        configuration.cleaningInterval = nil
        let time = self.time
        return DiskCache(configuration: configuration, now: { time.now }, clock: TestClock())
    }

    static func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seed)) }
    }

    /// The keys among `keys` a read finds now, in order.
    static func readable(_ keys: [String], in cache: DiskCache) async -> [String] {
        var found: [String] = []
        for key in keys where await cache.data(forKey: key) != nil { found.append(key) }
        return found
    }

    @Test("an entry's own expiration overrides the maximum age, reads extend it as its extension says, across reopens")
    func ownExpirations() async throws {
        // Given a maximum age of an hour, and entries (files and inline) that expire in 2 hours (renewed by reads,
        // the default), in 2 hours (not renewed), in 30 days, at a date 90 minutes away, never, and one that follows
        // the maximum age
        let cache = makeCache()
        let start = time.now
        let stores: [(String, Int, CacheExpiration?, ExpirationExtension?)] = [
            ("renewed", 2_000, .seconds(7_200), nil),
            ("fixed", 10, .seconds(7_200), ExpirationExtension.none),
            ("month", 2_000, .days(30), ExpirationExtension.none),
            ("dated", 10, .date(start.advanced(by: .seconds(5_400))), ExpirationExtension.none),
            ("never", 2_000, .never, nil),
            ("aged", 10, nil, nil),
        ]
        for (index, (key, size, expiration, renewal)) in stores.enumerated() {
            try await cache.store(
                Self.bytes(size, seed: UInt8(index)), forKey: key, expiration: expiration, extension: renewal)
        }
        let keys = stores.map(\.0)
        #expect(await cache.entry(forKey: "fixed")?.cacheExpiry == start.advanced(by: .seconds(7_200)))
        #expect(await cache.entry(forKey: "never")?.cacheExpiry == UnixTime(seconds: .infinity))
        #expect(await cache.entry(forKey: "aged")?.cacheExpiry == nil)

        // When 61 minutes pass
        time.advance(by: .seconds(3_660))
        // Then only the entry following the maximum age has gone
        #expect(await Self.readable(keys, in: cache) == ["renewed", "fixed", "month", "dated", "never"])

        // And after the cache is closed and reopened at 100 minutes, the dated entry is past its date; the fixed one
        // is within its 2 hours, the renewed one within the 2 hours its read at 61 minutes gave it
        await cache.close()
        time.advance(by: .seconds(2_340))
        let reopened = makeCache()
        #expect(await Self.readable(keys, in: reopened) == ["renewed", "fixed", "month", "never"])
        // And at 121 minutes the fixed one is gone; the renewed one, read at 100, is not
        time.advance(by: .seconds(1_260))
        #expect(await Self.readable(keys, in: reopened) == ["renewed", "month", "never"])

        // When 31 days pass, cleaning removes what expired, and says so
        time.advance(by: .seconds(31 * 86_400))
        let events = await reopened.clean()
        #expect(events.map(\.reason) == [.expired])
        #expect(Set(events.flatMap(\.keys)) == ["renewed", "month"])
        // And the entry that never expires outlives the maximum age, and is still there
        #expect(await reopened.allEntries().compactMap(\.key) == ["never"])
        #expect(await reopened.data(forKey: "never") == Self.bytes(2_000, seed: 4))
    }

    @Test("containedKeys and entries agree with reads on own expirations")
    func containedKeysFollowExpirations() async throws {
        // Given one entry expiring in a minute and one in a day, renewed by reads
        let cache = makeCache()
        try await cache.store(Self.bytes(10, seed: 1), forKey: "minute", expiration: .seconds(60))
        try await cache.store(Self.bytes(10, seed: 2), forKey: "day", expiration: .days(1))

        // When 59 s pass, "minute" is read, and 59 s more pass
        time.advance(by: .seconds(59))
        #expect(await cache.data(forKey: "minute") != nil)
        time.advance(by: .seconds(59))

        // Then both are present, the read having renewed the minute
        #expect(await cache.containedKeys(among: ["minute", "day"]) == ["minute", "day"])
        // And once the read is written to the index, the entry's expiry shows it
        _ = await cache.clean()
        #expect(await cache.entry(forKey: "minute")?.cacheExpiry == time.now.advanced(by: .seconds(1)))

        // When 2 s more pass, the minute without a read is up
        time.advance(by: .seconds(2))
        #expect(await cache.containedKeys(among: ["minute", "day"]) == ["day"])
    }

    @Test("extended data is kept with the entry, replaced by set and by a new store, across reopens")
    func extendedData() async throws {
        // Given a file entry and an inline one stored with extended data, and one without
        let cache = makeCache()
        try await cache.store(Self.bytes(5_000, seed: 1), forKey: "file", extendedData: Array("photographer=ada".utf8))
        try await cache.store(Self.bytes(10, seed: 2), forKey: "inline", extendedData: [1, 2, 3])
        try await cache.store(Self.bytes(10, seed: 3), forKey: "plain")

        // Then each reads back its own
        #expect(await cache.extendedData(forKey: "file") == Array("photographer=ada".utf8))
        #expect(await cache.extendedData(forKey: "inline") == [1, 2, 3])
        #expect(await cache.extendedData(forKey: "plain") == nil)
        #expect(await cache.extendedData(forKey: "absent") == nil)

        // When it is set on an entry, removed from another, and set for a key with no entry
        #expect(await cache.setExtendedData([9, 9], forKey: "plain"))
        #expect(await cache.setExtendedData(nil, forKey: "inline"))
        #expect(await cache.setExtendedData([7], forKey: "absent") == false)

        // Then the bytes are unchanged, and after a reopen the extended data is as set
        await cache.close()
        let reopened = makeCache()
        #expect(await reopened.extendedData(forKey: "plain") == [9, 9])
        #expect(await reopened.extendedData(forKey: "inline") == nil)
        #expect(await reopened.extendedData(forKey: "absent") == nil)
        #expect(await reopened.data(forKey: "plain") == Self.bytes(10, seed: 3))
        #expect(await reopened.data(forKey: "inline") == Self.bytes(10, seed: 2))

        // When the file entry is stored again without extended data, it has none
        try await reopened.store(Self.bytes(6_000, seed: 4), forKey: "file")
        #expect(await reopened.extendedData(forKey: "file") == nil)
    }

    @Test("extended data set while a store is staged is written with it")
    func extendedDataDuringStaging() async throws {
        // Given a store begun (readable) but not yet written, with extended data
        let cache = makeCache()
        let attributes = DiskCache.StoreAttributes(extendedData: [1])
        let pending = cache.beginStore(
            Self.bytes(10, seed: 1), forKey: "k", validators: .init(), attributes: attributes)
        #expect(await cache.extendedData(forKey: "k") == [1])

        // When the extended data is replaced before the write, then the write ends
        #expect(await cache.setExtendedData([2, 2], forKey: "k"))
        try await cache.finishStore(pending)

        // Then the written entry has the replacement
        await cache.close()
        #expect(await makeCache().extendedData(forKey: "k") == [2, 2])
    }
}
