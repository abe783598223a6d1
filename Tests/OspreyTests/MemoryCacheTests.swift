import Osprey
import OspreyTesting
import Synchronization
import Testing

@Suite struct MemoryCacheTests {
    /// A configuration with the given limits that leaves the process-wide memory monitor alone.
    static func configuration(
        costLimit: Int = 1_000_000, countLimit: Int = .max, shardCount: Int = 16
    ) -> MemoryCache<String, Int>.Configuration {
        var configuration = MemoryCache<String, Int>.Configuration(costLimit: costLimit, countLimit: countLimit)
        configuration.shardCount = shardCount
        configuration.respondsToMemoryPressure = false
        return configuration
    }

    @Test("the least recently used entry goes first, across shards", arguments: [1, 16])
    func leastRecentlyUsed(shardCount: Int) {
        // Given a cache of three entries where "a" was read after "b" and "c" were stored
        let cache = MemoryCache<String, Int>(configuration: Self.configuration(countLimit: 3, shardCount: shardCount))
        cache.setValue(1, forKey: "a")
        cache.setValue(2, forKey: "b")
        cache.setValue(3, forKey: "c")
        #expect(cache.value(forKey: "a") == 1)

        // When a fourth and then a fifth entry arrive
        cache.setValue(4, forKey: "d")
        cache.setValue(5, forKey: "e")

        // Then "b" and "c", the least recently used, are the ones evicted
        #expect(cache.value(forKey: "b") == nil)
        #expect(cache.value(forKey: "c") == nil)
        #expect(cache.value(forKey: "a") == 1)
        #expect(cache.value(forKey: "d") == 4)
        #expect(cache.value(forKey: "e") == 5)
        #expect(cache.count == 3)
    }

    @Test("the cost limit holds exactly after every store")
    func costLimit() {
        // Given a cost limit of 100 (so at most 10 per entry)
        let cache = MemoryCache<String, Int>(configuration: Self.configuration(costLimit: 100))

        // When 25 entries of costs 1…10 are stored
        var stored: [(String, Int)] = []
        for index in 0..<25 {
            let cost = index % 10 + 1
            cache.setValue(index, forKey: "k\(index)", cost: cost)
            stored.append(("k\(index)", cost))
            // Then the total never exceeds the limit, and the total is the sum of what is present
            #expect(cache.totalCost <= 100)
        }
        let present = stored.filter { cache.containsValue(forKey: $0.0) }
        #expect(cache.totalCost == present.reduce(0) { $0 + $1.1 })
        #expect(cache.count == present.count)
        // And what remains is the most recent run of entries: nothing older survives anything newer
        let presentIndices = present.map { Int($0.0.dropFirst())! }
        #expect(presentIndices == Array(presentIndices.first!..<25))
        #expect(cache.totalCost + (presentIndices.first! - 1) % 10 + 1 > 100)
    }

    @Test("an entry costing more than a tenth of the limit is not cached, and drops the key's old value")
    func perEntryCap() {
        // Given a limit of 1,000 and a small entry under "big"
        let cache = MemoryCache<String, Int>(configuration: Self.configuration(costLimit: 1_000))
        cache.setValue(1, forKey: "big", cost: 100)

        // When a value costing 101 is stored under the same key
        cache.setValue(2, forKey: "big", cost: 101)

        // Then neither is cached
        #expect(cache.value(forKey: "big") == nil)
        #expect(cache.totalCost == 0)
        #expect(cache.count == 0)
    }

    @Test("replacing a value replaces its cost")
    func replacing() {
        let cache = MemoryCache<String, Int>(configuration: Self.configuration())
        cache.setValue(1, forKey: "a", cost: 50)
        cache.setValue(2, forKey: "a", cost: 20)
        #expect(cache.value(forKey: "a") == 2)
        #expect(cache.totalCost == 20)
        #expect(cache.count == 1)
    }

    @Test("entries expire after their lifetime on the injected clock")
    func expiry() {
        // Given a default expiration of 10 s that reads do not extend, and one entry with its own of 30 s
        let clock = TestClock()
        var configuration = Self.configuration()
        configuration.expiration = .seconds(10)
        configuration.expirationExtension = .none
        let cache = MemoryCache<String, Int>(configuration: configuration, clock: clock)
        cache.setValue(1, forKey: "short", cost: 5)
        cache.setValue(2, forKey: "long", cost: 7, expiration: .seconds(30))

        // When 9 s pass, then 1 s more
        clock.advance(by: .seconds(9))
        #expect(cache.value(forKey: "short") == 1)
        clock.advance(by: .seconds(1))

        // Then the short entry is gone, and its cost with it
        #expect(cache.containsValue(forKey: "short") == false)
        #expect(cache.value(forKey: "short") == nil)
        #expect(cache.totalCost == 7)
        #expect(cache.value(forKey: "long") == 2)

        // And removeExpired drops the long one once its 30 s are up, without a lookup
        clock.advance(by: .seconds(20))
        cache.removeExpired()
        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
    }

    @Test("expirations of every kind, and reads extending them as each entry's extension says")
    func expirationKinds() {
        // Given entries that expire in 10 s (extended by reads to 10 s again, the default; not at all; to a day), at
        // a date 25 s away (extended to 25 s again), in 2 days, in the past, and never
        let clock = TestClock()
        let cache = MemoryCache<String, Int>(configuration: Self.configuration(), clock: clock)
        cache.setValue(1, forKey: "renewed", expiration: .seconds(10))
        cache.setValue(2, forKey: "fixed", expiration: .seconds(10), extension: ExpirationExtension.none)
        cache.setValue(3, forKey: "to a day", expiration: .seconds(10), extension: .expiration(.days(1)))
        cache.setValue(4, forKey: "dated", expiration: .date(UnixTime.now.advanced(by: .seconds(25))))
        cache.setValue(5, forKey: "two days", expiration: .days(2), extension: ExpirationExtension.none)
        cache.setValue(6, forKey: "past", expiration: .date(UnixTime(seconds: 0)))
        cache.setValue(7, forKey: "forever", expiration: .never)
        #expect(cache.value(forKey: "past") == nil)
        let keys = ["renewed", "fixed", "to a day", "dated", "two days", "forever"]

        // When each is read at 8 s
        clock.advance(by: .seconds(8))
        #expect(keys.compactMap { cache.value(forKey: $0) } == [1, 2, 3, 4, 5, 7])

        // Then at 16 s the one reads do not extend is gone; the read at 8 s kept the others
        clock.advance(by: .seconds(8))
        #expect(keys.compactMap { cache.value(forKey: $0) } == [1, 3, 4, 5, 7])

        // And at 27 s (11 s after the last read) the one renewed by 10 s is gone; the dated one, renewed by its 25 s,
        // is not
        clock.advance(by: .seconds(11))
        #expect(keys.compactMap { cache.value(forKey: $0) } == [3, 4, 5, 7])

        // And a day later (just inside the day the last read gave) the dated one is gone
        clock.advance(by: .seconds(86_399))
        #expect(keys.compactMap { cache.value(forKey: $0) } == [3, 5, 7])
        // And past two days the one of two days, whose reads extend nothing, is gone; the one a read renews to a day
        // is not, until a day passes without a read
        clock.advance(by: .seconds(86_399))
        #expect(keys.compactMap { cache.value(forKey: $0) } == [3, 7])
        clock.advance(by: .seconds(86_401))
        #expect(keys.compactMap { cache.value(forKey: $0) } == [7])
        #expect(cache.count == 1)
    }

    @Test("trim to a cost or a count, and remove all")
    func trimming() {
        // Given ten entries of cost 10, stored in order
        let cache = MemoryCache<String, Int>(configuration: Self.configuration())
        for index in 0..<10 { cache.setValue(index, forKey: "k\(index)", cost: 10) }

        // When trimmed to a cost of 55, then to 2 entries
        cache.trim(toCost: 55)
        #expect(cache.totalCost == 50)
        #expect(cache.value(forKey: "k4") == nil)
        #expect(cache.value(forKey: "k5") == 5)
        cache.trim(toCount: 2)

        // Then the most recently used survive: k5 (just read) and k9
        #expect(cache.count == 2)
        #expect(cache.value(forKey: "k5") == 5)
        #expect(cache.value(forKey: "k9") == 9)

        // And removeAll empties it
        cache.removeAll()
        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
        #expect(cache.value(forKey: "k9") == nil)
    }

    @Test("memory pressure halves the cache on a warning and empties it when critical")
    func memoryPressure() {
        let cache = MemoryCache<String, Int>(configuration: Self.configuration())
        for index in 0..<10 { cache.setValue(index, forKey: "k\(index)", cost: 10) }
        cache.handleMemoryPressure(.normal)
        #expect(cache.totalCost == 100)
        cache.handleMemoryPressure(.warning)
        #expect(cache.totalCost == 50)
        #expect(cache.value(forKey: "k9") == 9)
        cache.handleMemoryPressure(.critical)
        #expect(cache.count == 0)
    }

    @Test("concurrent stores, reads and removals keep the totals exact and the limits held")
    func concurrency() async {
        // Given a cache limited to 200 entries and a cost of 5,000
        let cache = MemoryCache<String, Int>(configuration: Self.configuration(costLimit: 5_000, countLimit: 200))

        // When four tasks store, read and remove 500 keys 20,000 times each
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<4 {
                group.addTask {
                    var state = UInt64(task + 1)
                    for _ in 0..<20_000 {
                        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                        let key = "k\((state >> 33) % 500)"
                        switch state >> 60 {
                        case 0: cache.removeValue(forKey: key)
                        case 1...5: cache.setValue(Int(state >> 40), forKey: key, cost: Int(state >> 58) + 1)
                        default: _ = cache.value(forKey: key)
                        }
                    }
                }
            }
        }

        // Then the limits hold and the running totals equal what is actually present
        #expect(cache.count <= 200)
        #expect(cache.totalCost <= 5_000)
        let present = (0..<500).filter { cache.containsValue(forKey: "k\($0)") }
        #expect(cache.count == present.count)
        #expect(cache.count > 0)
    }
}
