#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension DiskCache {
    /// Where a ``DiskCache`` keeps its entries and how much it keeps.
    public struct Configuration: Sendable {
        // MARK: Location

        /// The cache's name: its directory is `<base>/osprey/<namespace>`. `"default"` by default.
        public var namespace: String = "default"

        /// The directory that holds Osprey's caches: `$XDG_CACHE_HOME`, else `~/.cache`, by default. The cache itself
        /// is not this directory but ``directory``, `<baseDirectory>/osprey/<namespace>`, so that caches of several
        /// namespaces (and other programs' caches) share a base without mixing; `osprey cache info` prints it.
        public var baseDirectory: String = Configuration.platformCacheDirectory

        /// Open the cache for reading only: the directory and the index are never created, and nothing is written
        /// or removed, not even access times or damaged entries; stores fail. An index another process keeps is read
        /// as it is; without one the cache is empty. `false` by default. For tools that only look (`osprey cache info`
        /// and `ls`) and loads that must leave the disk as it was (`--memory-only`).
        public var isReadOnly = false

        /// Whether the cache serves many users, as a proxy's does: then an entry stored as private
        /// (``HTTPValidators/isPrivate``: the origin sent `Cache-Control: private`, and a private cache sharing the
        /// directory kept it) is a miss. `false` by default. Set it with ``ImageManager/Configuration/isSharedCache``
        /// (`osprey serve` does).
        public var isShared = false

        /// Directories searched, read-only, when an entry is not in the cache (files named as the cache names them,
        /// holding the bytes as they are: say, images bundled with a deployment). None by default.
        public var readOnlyDirectories: [String] = []

        // MARK: Limits

        /// The most bytes the entries may take. 1 GiB by default.
        public var sizeLimit: Int = 1 << 30

        /// How long an entry stays after it was last read, unless it was stored with an expiration of its own. 7 days
        /// by default; `nil` keeps entries until the size limit removes them.
        public var maximumAge: Duration? = .seconds(7 * 24 * 3600)

        /// How reads move the expiry of an entry stored with an expiration of its own and no extension. By default
        /// ``ExpirationExtension/cacheTime``: each read gives the entry its lifetime again (Kingfisher's disk storage
        /// does the same).
        public var expirationExtension: ExpirationExtension = .cacheTime

        /// Over the size limit, least recently used entries go until the size is at most this fraction of the
        /// limit, so that cleaning does not run again at the next write. 0.5 (half, as the seeds do) by default.
        public var sizeTargetRatio: Double = 0.5

        /// Entries of at most this many bytes are kept with the index, appended to its pack files (`pack-1`,
        /// `pack-2`, ... in ``directory``) in the transaction that records them, rather than as a file each. 64 KiB by
        /// default; 0 keeps every entry as a file; a value over 16 MiB counts as 16 MiB.
        ///
        /// Most images on the web are small (the median of the test corpus is 1.4 KB), and a file each costs an inode,
        /// a temporary name and a rename, which on some filesystems is most of a store's time; an append to an open
        /// pack costs one write. An entry kept in a pack is checked against its CRC-32 at every read like a file,
        /// counts towards ``sizeLimit`` by its size, and is lost with a lost or damaged index (a rebuild finds only the
        /// files). The bytes of a removed or replaced entry stay in its pack until the pack is deleted (when no entry
        /// is left in it) or compacted by cleaning (when its entries fill less than half of it, or less than
        /// ``sizeTargetRatio``); a write counts them towards the limit, so they never take the cache past it for long.
        public var inlineSizeLimit: Int = 64 * 1024

        /// Whether an entry of `size` bytes is kept with the index. Never one over 16 MiB: a pack is a few MiB, and a
        /// file of its own frees a large entry's space the moment it is removed.
        func keepsInIndex(size: Int) -> Bool {
            inlineSizeLimit > 0 && size <= min(inlineSizeLimit, 16 << 20)
        }

        /// Whether files of 256 KiB or more are written around the page cache (`O_DIRECT` on Linux; an ordinary write
        /// where the file system refuses it, and on other systems). `false` by default; `osprey serve` sets it.
        ///
        /// A file written through the page cache is first copied into it, which costs CPU on every store and pushes
        /// out pages that readers use. Written directly, the copy is gone, but each write waits for the device: right
        /// for a server whose answers do not wait for the store and which keeps what it decodes in memory, wrong for a
        /// batch that waits for every write (`osprey prefetch` made fewer files a second with it). The measurements are
        /// in docs/benchmarks.md, "Sources written around the page cache".
        public var writesAroundPageCache = false

        /// How often the cache cleans itself while it is in use. Every 10 minutes by default; `nil` cleans only
        /// after writes that cross the size limit and on demand.
        public var cleaningInterval: Duration? = .seconds(600)

        /// Makes the default configuration.
        public init() {}

        /// The default configuration for the cache named `namespace`.
        public init(namespace: String) {
            self.namespace = namespace
        }

        /// The cache's own directory.
        public var directory: String { baseDirectory + "/osprey/" + namespace }

        /// `$XDG_CACHE_HOME`, or `$HOME/.cache`, or `/tmp` when neither is set.
        public static var platformCacheDirectory: String {
            if let xdg = getenv("XDG_CACHE_HOME").map({ String(cString: $0) }), xdg.hasPrefix("/") { return xdg }
            if let home = getenv("HOME").map({ String(cString: $0) }), !home.isEmpty { return home + "/.cache" }
            return "/tmp"
        }
    }

    /// What the origin said about an entry's freshness, kept for revalidation: see ``HTTPValidators``.
    public typealias Validators = HTTPValidators

    /// An entry as the index knows it.
    public struct Entry: Sendable, Equatable {
        /// The key it was stored under; `nil` for an entry found on disk when the index was rebuilt.
        public var key: String?
        /// Its file name in the cache directory; an entry kept with the index (see ``isInIndex``) is indexed under
        /// this name and has no file.
        public var fileName: String
        /// Whether its bytes are kept with the index, in a pack file, rather than in a file of their own (entries of
        /// at most ``Configuration/inlineSizeLimit`` bytes).
        public var isInIndex: Bool
        /// Its size in bytes.
        public var size: Int
        /// When it was stored.
        public var created: UnixTime
        /// When it was last read (recorded in batches, so up to a second late).
        public var lastAccess: UnixTime
        /// When it stops being fresh, per the origin's max-age; `nil` when the origin gave none.
        public var expires: UnixTime?
        /// When it leaves the cache by the expiration it was stored with, as reads written to the index have moved it
        /// (`UnixTime(seconds: .infinity)`: never); `nil` when it follows ``Configuration/maximumAge`` instead.
        public var cacheExpiry: UnixTime?
        /// The origin's validators.
        public var validators: Validators
    }

    /// Why entries were removed.
    public enum RemovalReason: String, Sendable {
        /// Not read for longer than ``Configuration/maximumAge``, or past the expiry it was stored with.
        case expired
        /// The least recently used, removed to bring the cache under its size limit.
        case sizeLimit
        /// Truncated, altered or unreadable: its bytes no longer match the index.
        case damaged
        /// Removed by a caller (`removeData(forKey:)` or `removeAll()`).
        case removed
    }

    /// Something that happened to the cache's contents.
    public struct Event: Sendable, Equatable {
        /// Why.
        public var reason: RemovalReason
        /// The keys removed (the file name for entries whose key is unknown).
        public var keys: [String]
        /// The bytes they took.
        public var bytes: Int

        /// Makes an event.
        public init(reason: RemovalReason, keys: [String], bytes: Int) {
            self.reason = reason
            self.keys = keys
            self.bytes = bytes
        }
    }
}

/// Seconds since 1970-01-01 UTC: the disk cache's timestamps, comparable across processes and restarts.
public struct UnixTime: Sendable, Hashable, Comparable {
    /// Seconds since the epoch.
    public var seconds: Double

    /// Makes a time `seconds` after the epoch.
    public init(seconds: Double) {
        self.seconds = seconds
    }

    /// The system's wall clock now.
    public static var now: UnixTime {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return UnixTime(seconds: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9)
    }

    /// Whether `lhs` is earlier than `rhs`.
    public static func < (lhs: UnixTime, rhs: UnixTime) -> Bool { lhs.seconds < rhs.seconds }

    /// This time moved by `duration`.
    public func advanced(by duration: Duration) -> UnixTime {
        UnixTime(seconds: seconds + duration.seconds)
    }
}

extension Duration {
    /// The duration in seconds, fractions included.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
