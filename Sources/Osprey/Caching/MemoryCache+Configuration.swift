extension MemoryCache {
    /// How much a ``MemoryCache`` holds and for how long.
    public struct Configuration: Sendable {
        // MARK: Limits

        /// The most the costs of all entries may add up to (for images: bytes of pixels). 15% of the memory
        /// available to the process — the cgroup's limit when one is set, else physical memory — capped at 1 GiB, by
        /// default (``SystemMemory/defaultCacheCostLimit``).
        public var costLimit: Int = SystemMemory.defaultCacheCostLimit

        /// The most entries the cache holds. No limit (`Int.max`) by default.
        public var countLimit: Int = .max

        /// An entry whose cost is above this fraction of ``costLimit`` is not cached at all, so that one huge image
        /// cannot flush everything else. 0.1 (a tenth) by default.
        public var maximumEntryCostFraction: Double = 0.1

        // MARK: Lifetime

        /// How long an entry stays after it is stored, unless it is stored with its own expiration. ``CacheExpiration/never``
        /// (until evicted) by default.
        public var expiration: CacheExpiration = .never

        /// How a read moves the expiry of an entry stored without its own extension. ``ExpirationExtension/cacheTime``
        /// (each read gives the entry its lifetime again, as Kingfisher's memory storage does) by default.
        public var expirationExtension: ExpirationExtension = .cacheTime

        // MARK: Concurrency

        /// How many independently locked parts the cache is split into, so that concurrent hits on different keys
        /// do not queue behind one lock. Eviction stays least-recently-used across all of them. 16 by default;
        /// 1 gives a single lock.
        public var shardCount: Int = 16

        // MARK: Memory pressure

        /// Whether the cache registers with ``MemoryPressureMonitor/shared`` and trims itself when the process or
        /// machine runs short of memory. `true` by default.
        public var respondsToMemoryPressure = true

        /// Makes the default configuration.
        public init() {}

        /// The default configuration with a cost limit of `costLimit`.
        public init(costLimit: Int, countLimit: Int = .max) {
            self.costLimit = costLimit
            self.countLimit = countLimit
        }

        /// The cost above which an entry is not cached, under a cost limit of `costLimit`.
        /// Saturating: a limit of `Int.max` with a fraction of 1 or more is `Int.max`, a NaN or negative fraction 0.
        @inlinable func maximumEntryCost(of costLimit: Int) -> Int {
            let cost = (Double(costLimit) * maximumEntryCostFraction).rounded(.down)
            guard cost > 0 else { return 0 }  // NaN too
            return cost < 0x1p63 ? Int(cost) : .max
        }
    }
}
