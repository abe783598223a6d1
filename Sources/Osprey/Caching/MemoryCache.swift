public import Synchronization

/// A thread-safe key/value store in memory with exact cost and count limits, evicting the least recently used entry
/// first. ``ImageCache`` keeps decoded images in one; any `Sendable` value can be kept.
///
/// ```swift
/// let cache = MemoryCache<String, Image>(configuration: .init(costLimit: 256 << 20))
/// cache.setValue(image, forKey: url.absoluteString, cost: image.cost)
/// let hit = cache.value(forKey: url.absoluteString)
/// ```
///
/// Every operation is O(1) (eviction is O(shards)). The cache is split into ``Configuration/shardCount`` parts, each
/// behind its own lock, so concurrent hits on different keys do not queue behind one another; a global use counter
/// keeps least-recently-used order exact across the parts. After `setValue` returns, the limits hold. An entry
/// costing more than ``Configuration/maximumEntryCostFraction`` of the cost limit is not cached. The cache trims
/// itself under memory pressure (``MemoryPressureMonitor``): to half its cost on a warning, to nothing when critical.
public final class MemoryCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// The limits this cache was made with; ``costLimit`` and ``countLimit`` may have changed since.
    public let configuration: Configuration

    /// The most the entries' costs may add up to; starts at the configuration's. Setting it evicts least recently
    /// used entries until the cache fits, and moves the per-entry maximum with it (Kingfisher's
    /// `totalCostLimit`, changeable at run time).
    public var costLimit: Int {
        get { currentCostLimit.load(ordering: .relaxed) }
        set {
            currentCostLimit.store(max(newValue, 0), ordering: .relaxed)
            trim(toCost: costLimit, count: countLimit)
        }
    }

    /// The most entries the cache holds; starts at the configuration's. Setting it evicts least recently used entries
    /// until the cache fits.
    public var countLimit: Int {
        get { currentCountLimit.load(ordering: .relaxed) }
        set {
            currentCountLimit.store(max(newValue, 0), ordering: .relaxed)
            trim(toCost: costLimit, count: countLimit)
        }
    }

    // The hot paths are @inlinable so that a caller's MemoryCache<K, V> is specialised for K and V: unspecialised
    // generic code spent most of a hit looking up type metadata.
    @usableFromInline let shards: [Shard]
    /// The next use stamp: orders uses across shards.
    @usableFromInline let clockTick = Atomic<UInt64>(0)
    @usableFromInline let costTotal = Atomic<Int>(0)
    @usableFromInline let entryCount = Atomic<Int>(0)
    @usableFromInline let currentCostLimit: Atomic<Int>
    @usableFromInline let currentCountLimit: Atomic<Int>
    /// Time on the cache's clock in seconds, for entry lifetimes.
    @usableFromInline let now: @Sendable () -> Double

    /// One lock's worth of entries. Its tail stamp is readable without the lock, to pick which shard to evict from.
    @usableFromInline
    final class Shard: Sendable {
        @usableFromInline let list = Mutex(LRUList<Key, Value>())
        /// The stamp of the shard's least recently used entry; `UInt64.max` when the shard is empty.
        @usableFromInline let tailStamp = Atomic<UInt64>(.max)
        /// Keeps neighbouring shards' locks off one cache line.
        private let padding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)

        @usableFromInline init() {}
    }

    /// Makes an empty cache whose entry lifetimes run on `clock`.
    public init<C: Clock>(configuration: Configuration = Configuration(), clock: C) where C.Duration == Duration {
        self.configuration = configuration
        self.currentCostLimit = Atomic(configuration.costLimit)
        self.currentCountLimit = Atomic(configuration.countLimit)
        self.shards = (0..<max(configuration.shardCount, 1)).map { _ in Shard() }
        let start = clock.now
        self.now = { start.duration(to: clock.now).seconds }
        if configuration.respondsToMemoryPressure {
            MemoryPressureMonitor.shared.register(self)
        }
    }

    /// Makes an empty cache whose entry lifetimes run on the continuous clock.
    public convenience init(configuration: Configuration = Configuration()) {
        self.init(configuration: configuration, clock: ContinuousClock())
    }

    deinit {
        MemoryPressureMonitor.shared.unregister(self)
    }

    // MARK: Reading

    /// The sum of the entries' costs.
    @inlinable
    public var totalCost: Int { costTotal.load(ordering: .relaxed) }

    /// How many entries the cache holds.
    @inlinable
    public var count: Int { entryCount.load(ordering: .relaxed) }

    /// The value for `key`, which becomes the most recently used entry; `nil` when absent or expired (an expired
    /// entry is removed).
    @inlinable
    public func value(forKey key: Key) -> Value? {
        let shard = shard(for: key)
        let lookup = shard.list.withLock { list in
            list.lookups &+= 1
            let lookup = list.value(forKey: key, stamp: nextStamp(), now: now)
            if case .expired(let removed) = lookup {
                account(cost: -removed.cost, count: -1)
            }
            shard.tailStamp.store(list.tailStamp ?? .max, ordering: .relaxed)
            return lookup
        }
        if case .hit(let value) = lookup { return value }
        return nil  // An expired value is released here, outside the lock.
    }

    /// Whether `key` has an unexpired entry; does not make it more recently used.
    @inlinable
    public func containsValue(forKey key: Key) -> Bool {
        shard(for: key).list.withLock { list in
            list.lookups &+= 1
            return list.contains(key, now: now)
        }
    }

    /// How many lookups (``value(forKey:)``, ``containsValue(forKey:)``) the cache has answered: what a test of the
    /// manager counts to see that a load asks each cache once. Counted per shard under its lock, so a hit writes no
    /// line other shards share.
    var lookups: Int { shards.reduce(0) { total, shard in total + shard.list.withLock { $0.lookups } } }

    // MARK: Writing

    /// Stores `value` for `key` as the most recently used entry, then evicts least recently used entries until the
    /// limits hold. A `cost` above the per-entry maximum, or an expiration already past, is not cached, and removes
    /// what `key` held. `expiration` and `extension` override ``Configuration/expiration`` and
    /// ``Configuration/expirationExtension`` for this entry.
    @inlinable
    public func setValue(
        _ value: Value, forKey key: Key, cost: Int = 1, expiration: CacheExpiration? = nil,
        extension renewal: ExpirationExtension? = nil
    ) {
        store(value, forKey: key, cost: cost, expiration: expiration, extension: renewal, unless: nil)
    }

    /// Stores `value` for `key` as ``setValue(_:forKey:cost:expiration:extension:)`` does, unless the unexpired value
    /// `key` holds satisfies `keeps`: one look at the entry, under the lock that writes it. Returns whether `value`
    /// was stored.
    @discardableResult
    func setValue(
        _ value: Value, forKey key: Key, cost: Int, expiration: CacheExpiration?, unless keeps: (Value) -> Bool
    ) -> Bool {
        withoutActuallyEscaping(keeps) { keeps in
            store(value, forKey: key, cost: cost, expiration: expiration, extension: nil, unless: keeps)
        }
    }

    @inlinable @discardableResult
    func store(
        _ value: Value, forKey key: Key, cost: Int, expiration: CacheExpiration?,
        extension renewal: ExpirationExtension?,
        unless keeps: ((Value) -> Bool)?
    ) -> Bool {
        let (costLimit, countLimit) = (self.costLimit, self.countLimit)
        guard cost >= 0, cost <= configuration.maximumEntryCost(of: costLimit), countLimit > 0 else {
            removeValue(forKey: key)
            return false
        }
        let expiry = expiryRule(expiration ?? configuration.expiration, renewal ?? configuration.expirationExtension)
        if let expiry, expiry.hasExpired(at: now()) {
            removeValue(forKey: key)  // Already past (a date gone by): not kept, and the old value goes.
            return false
        }
        let shard = shard(for: key)
        let replaced = shard.list.withLock { list -> LRUList<Key, Value>.Removed?? in
            if let keeps, let kept = list.peek(key, now: now), keeps(kept) { return .none }
            let replaced = list.setValue(value, forKey: key, cost: cost, expiry: expiry, stamp: nextStamp())
            account(cost: cost - (replaced?.cost ?? 0), count: replaced == nil ? 1 : 0)
            shard.tailStamp.store(list.tailStamp ?? .max, ordering: .relaxed)
            return .some(replaced)
        }
        guard replaced != nil else { return false }  // What was replaced is released here, outside the lock.
        trim(toCost: costLimit, count: countLimit)
        return true
    }

    /// Removes the entry for `key`; returns its value.
    @inlinable @discardableResult
    public func removeValue(forKey key: Key) -> Value? {
        let shard = shard(for: key)
        return shard.list.withLock { list in
            let removed = list.removeValue(forKey: key)
            if let removed { account(cost: -removed.cost, count: -1) }
            shard.tailStamp.store(list.tailStamp ?? .max, ordering: .relaxed)
            return removed?.value
        }
    }

    /// Removes every entry.
    public func removeAll() {
        for shard in shards {
            let values = shard.list.withLock { list in
                account(cost: -list.totalCost, count: -list.count)
                shard.tailStamp.store(.max, ordering: .relaxed)
                return list.removeAll()
            }
            _ = values  // Released outside the lock.
        }
    }

    /// Removes every entry whose lifetime has run out (they are also dropped when next looked up).
    public func removeExpired() {
        let now = now()
        for shard in shards {
            let removed = shard.list.withLock { list in
                let removed = list.removeExpired(now: now)
                account(cost: -removed.reduce(0) { $0 + $1.cost }, count: -removed.count)
                shard.tailStamp.store(list.tailStamp ?? .max, ordering: .relaxed)
                return removed
            }
            _ = removed
        }
    }

    /// Evicts least recently used entries until the total cost is at most `cost`.
    @inlinable
    public func trim(toCost cost: Int) {
        trim(toCost: cost, count: .max)
    }

    /// Evicts least recently used entries until at most `count` remain.
    @inlinable
    public func trim(toCount count: Int) {
        trim(toCost: .max, count: count)
    }

    // MARK: Internals

    @inlinable
    func trim(toCost cost: Int, count: Int) {
        while totalCost > cost || self.count > count {
            // The shard whose least recently used entry is the oldest; a concurrent use may change that meanwhile,
            // which at worst evicts an entry used a moment ago instead.
            var oldest: Shard?
            var oldestStamp = UInt64.max
            for shard in shards {
                let stamp = shard.tailStamp.load(ordering: .relaxed)
                if stamp < oldestStamp {
                    (oldest, oldestStamp) = (shard, stamp)
                }
            }
            guard let oldest else { return }
            let removed = oldest.list.withLock { list in
                let removed = list.removeLeastRecentlyUsed()
                if let removed { account(cost: -removed.cost, count: -1) }
                oldest.tailStamp.store(list.tailStamp ?? .max, ordering: .relaxed)
                return removed
            }
            _ = removed
        }
    }

    /// The rule of an entry stored now; `nil` for one that never expires (whose lookups never read the clock).
    @usableFromInline
    func expiryRule(_ expiration: CacheExpiration, _ renewal: ExpirationExtension) -> ExpiryRule? {
        guard expiration != .never else { return nil }
        let time = now()
        return ExpiryRule(expiration, extension: renewal, storedAt: time, dateOffset: time - UnixTime.now.seconds)
    }

    @inlinable
    func shard(for key: Key) -> Shard {
        shards[Int(UInt(bitPattern: key.hashValue) % UInt(shards.count))]
    }

    /// Taken under a shard's lock, so stamps grow along each shard's list.
    @inlinable
    func nextStamp() -> UInt64 {
        clockTick.wrappingAdd(1, ordering: .relaxed).newValue
    }

    @inlinable
    func account(cost: Int, count: Int) {
        costTotal.wrappingAdd(cost, ordering: .relaxed)
        entryCount.wrappingAdd(count, ordering: .relaxed)
    }
}

extension MemoryCache: MemoryPressureResponder {
    /// Trims to half the current cost on a warning and empties the cache when memory is critical.
    public func handleMemoryPressure(_ pressure: MemoryPressure) {
        switch pressure {
        case .normal: break
        case .warning: trim(toCost: totalCost / 2)
        case .critical: removeAll()
        }
    }
}
