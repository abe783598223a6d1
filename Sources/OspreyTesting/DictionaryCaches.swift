public import Osprey
public import OspreyCodecs
public import Synchronization

// The ThreadSanitizer build's `Osprey.Mutex` (a lock TSan sees) beside the standard library's: named here, so that
// the two never meet unqualified.
#if OSPREY_TSAN
private typealias Lock<Value> = Osprey.Mutex<Value>
#else
private typealias Lock<Value> = Synchronization.Mutex<Value>
#endif

/// A store of bytes of a user's own, plugged into an `ImageCache` in place of its `DiskCache`: a dictionary that
/// counts what it is asked, key by key, so that a test sees which loads reach it and how often.
public final class DictionaryDataCache: DataCaching {
    /// One stored entry.
    public struct Entry: Sendable {
        /// The bytes stored.
        public var bytes: [UInt8]
        /// The origin's validators stored with them.
        public var validators: HTTPValidators
        /// The expiration asked for.
        public var expiration: CacheExpiration?
        /// The extended data set on the entry.
        public var extendedData: [UInt8]?
    }

    private let entries = Lock<[String: Entry]>([:])
    private let reads = Lock<[String: Int]>([:])
    /// How many stores were made.
    public let writes = Atomic<Int>(0)
    /// When set, every store fails as a full disk would.
    public let failsStores = Atomic<Bool>(false)
    /// How many times `close()` was called.
    public let closeCount = Atomic<Int>(0)

    /// An empty store.
    public init() {}

    /// The entries, by key.
    public var allEntries: [String: Entry] { entries.withLock { $0 } }

    /// The reads of stored bytes (`cachedData(forKey:)`), by key.
    public var readsByKey: [String: Int] { reads.withLock { $0 } }

    /// How many reads of stored bytes there were, all keys together.
    public var readCount: Int { reads.withLock { $0.values.reduce(0, +) } }

    /// The keys stored.
    public var keys: Set<String> { entries.withLock { Set($0.keys) } }

    /// The bytes stored for `key`, not counted as a read.
    public func bytes(forKey key: String) -> [UInt8]? {
        entries.withLock { $0[key]?.bytes }
    }

    /// The entry's bytes, counted as a read of `key`.
    public func cachedData(forKey key: String) -> [UInt8]? {
        reads.withLock { $0[key, default: 0] += 1 }
        return entries.withLock { $0[key]?.bytes }
    }

    /// The entry's validators.
    public func validators(forKey key: String) async -> HTTPValidators? {
        entries.withLock { $0[key]?.validators }
    }

    /// Keeps `data` for `key`, unless ``failsStores`` is set.
    public func storeData(
        _ data: [UInt8], forKey key: String, validators: HTTPValidators, expiration: CacheExpiration?
    ) async throws(CacheError) {
        guard !failsStores.load(ordering: .relaxed) else { throw .diskFull(key: key) }
        writes.wrappingAdd(1, ordering: .relaxed)
        entries.withLock { $0[key] = Entry(bytes: data, validators: validators, expiration: expiration) }
    }

    /// The entry's extended data.
    public func extendedData(forKey key: String) async -> [UInt8]? {
        entries.withLock { $0[key]?.extendedData }
    }

    /// Sets the entry's extended data.
    public func setExtendedData(_ data: [UInt8]?, forKey key: String) async -> Bool {
        entries.withLock { entries in
            guard entries[key] != nil else { return false }
            entries[key]?.extendedData = data
            return true
        }
    }

    /// Forgets `key`.
    public func removeData(forKey key: String) async {
        _ = entries.withLock { $0.removeValue(forKey: key) }
    }

    /// Whether `key` is stored.
    public func containsData(forKey key: String) async -> Bool {
        entries.withLock { $0[key] != nil }
    }

    /// Forgets every key.
    public func removeAllData() async {
        entries.withLock { $0 = [:] }
    }

    /// The bytes stored and the entries' count.
    public func storedTotals() async -> (size: Int, count: Int)? {
        entries.withLock { ($0.values.reduce(0) { $0 + $1.bytes.count }, $0.count) }
    }

    /// Counts the call.
    public func close() async {
        closeCount.wrappingAdd(1, ordering: .relaxed)
    }
}

/// A memory store of a user's own, plugged into an `ImageCache` in place of its `MemoryCache`: a dictionary without
/// limits that counts its lookups, key by key.
public final class DictionaryImageCache: ImageCaching {
    private let images = Lock<[String: Image]>([:])
    private let lookups = Lock<[String: Int]>([:])

    /// An empty store.
    public init() {}

    /// The lookups (`cachedImage(forKey:)`, `containsImage(forKey:)`), by key.
    public var lookupsByKey: [String: Int] { lookups.withLock { $0 } }

    /// How many lookups there were, all keys together.
    public var lookupCount: Int { lookups.withLock { $0.values.reduce(0, +) } }

    /// The image for `key`, counted as a lookup.
    public func cachedImage(forKey key: String) -> Image? {
        lookups.withLock { $0[key, default: 0] += 1 }
        return images.withLock { $0[key] }
    }

    /// Keeps `image` for `key`.
    public func storeImage(_ image: Image, forKey key: String, expiration: CacheExpiration?) {
        images.withLock { $0[key] = image }
    }

    /// Whether `key` has an image, counted as a lookup.
    public func containsImage(forKey key: String) -> Bool {
        lookups.withLock { $0[key, default: 0] += 1 }
        return images.withLock { $0[key] != nil }
    }

    /// Forgets `key`.
    public func removeImage(forKey key: String) { _ = images.withLock { $0.removeValue(forKey: key) } }

    /// Forgets every image.
    public func removeAllImages() { images.withLock { $0 = [:] } }
}
