public import Logging
internal import NIOPosix
import Synchronization

/// Bytes by key in a directory, with an index that makes every operation O(log n), limits that are enforced while
/// the process runs, and atomic writes.
///
/// ```swift
/// let cache = DiskCache(configuration: .init(namespace: "thumbnails"))
/// try await cache.store(bytes, forKey: url)
/// let hit = await cache.data(forKey: url)        // nil on a miss
/// for await event in cache.events() { print(event.reason, event.keys) }
/// ```
///
/// - Entries of at most ``Configuration/inlineSizeLimit`` bytes (64 KiB by default) are appended to pack files
///   (`pack-<n>`) beside the index, in the transaction that records them; larger ones are files named by
///   ``fileName(forKey:)`` in ``Configuration/directory``, each written to a temporary file and renamed into place, so
///   a reader never sees part of one.
/// - The index (SQLite in WAL mode, `index.sqlite` in the directory) records each entry's key, size, CRC-32, times,
///   HTTP validators and, for a packed one, its pack and offset. It survives crashes, is rebuilt from the directory's
///   files when lost or damaged (the packed entries are lost with it), and lets several processes share one
///   directory: appends, renames and deletions happen inside its write transactions.
/// - A read checks the bytes against the index: a truncated, grown or altered entry is a miss, and is removed.
/// - Cleaning removes entries past the expiry they were stored with, and those without one not read for
///   ``Configuration/maximumAge``, then, over ``Configuration/sizeLimit``,
///   the least recently used until the size is under ``Configuration/sizeTargetRatio`` of it. It runs after a write
///   crosses the limit, every ``Configuration/cleaningInterval``, and on ``clean()``, in small batches so reads and
///   writes go on meanwhile, and reports what it removed through ``events()``.
/// - A store is readable at once: until its file and row are written, reads, ``entry(forKey:)`` and
///   ``containsData(forKey:)`` answer from the bytes being written (Nuke's data cache stages its writes the same
///   way), so a load right after another one stored an image does not miss because the write is still on its way. A
///   removal, or a later store of the same key, made meanwhile wins over that write. ``totals()`` and
///   ``allEntries()`` count written entries only.
/// - A directory that cannot be created makes the cache memory-only: one warning is logged, stores do nothing and
///   reads miss (the read-only directories are still searched). One that exists but cannot be written (a read-only
///   mount, `chattr +i`) is read as it is, and stores fail. A full disk fails that one store.
/// - ``Configuration/isReadOnly`` opens the cache for looking only: nothing is created, written or removed, not even
///   an access time (`osprey cache info`, `--memory-only`).
/// - A directory deleted or replaced from outside is noticed by the next read (checked at most every two seconds: the
///   index file's inode): the cache starts afresh, as Kingfisher's and Nuke's do, instead of answering from the
///   unlinked index that SQLite would go on reading.
///
/// All work runs on NIO's blocking thread pool, never on the caller's task.
public final class DiskCache: Sendable {
    /// Where and how much this cache keeps.
    public let configuration: Configuration

    let logger: Logger
    let now: @Sendable () -> UnixTime
    let threadPool: NIOThreadPool
    /// The index connection; `nil` when the directory is unusable and the cache is memory-only. Every SQLite call
    /// runs under this lock, and `state`'s is only ever taken inside it, never around it: the bookkeeping in `state`
    /// (staging, on the caller's thread) never waits for an index write to commit.
    let index: Mutex<DiskIndex?>
    /// A second, read-only connection to the index for lookups, so that a read never waits for the writer's
    /// transaction (WAL readers and the writer run at once); `nil` when the index is read-only or absent (reads then
    /// use `index`). Only ever taken alone, or inside `index`'s lock when (re)opening.
    let reader: Mutex<DiskIndex?>
    let state: Mutex<State>
    /// Pack files open for reading, so a hit on a packed entry is one `pread`. Taken alone, never around another lock.
    let packReaders = Mutex(PackReaders())
    let broadcaster = EventBroadcaster<Event>()
    /// Held for a whole cleaning pass (on a pool thread), so passes never overlap; reads and writes do not take it.
    private let cleaning = Mutex(())
    /// How many store transactions were committed (tests read it to see stores grouped).
    let storeCommits = Atomic<Int>(0)

    struct Verified {
        var record: DiskIndex.Record
        var stamp: FileSystem.Stamp
    }

    /// A store whose write has not ended: readable meanwhile (see the type's documentation).
    struct Staged {
        var bytes: [UInt8]
        var entry: Entry
        /// Its extended data: the store's, or what ``setExtendedData(_:forKey:)`` set since (which the write takes).
        var extendedData: [UInt8]?
        /// Which store of the key this is: a write only lands while its store is still the key's latest.
        var generation: UInt64
    }

    struct State {
        /// Whether `index` is `nil`: the directory is unusable and the cache is memory-only.
        var isMemoryOnly = true
        /// Whether `index` is open for reading only (``Configuration/isReadOnly``, or a directory that cannot be
        /// written): nothing is staged, written or removed.
        var isReadOnly = false
        /// The index file `index` has open, to notice it was deleted or replaced from outside.
        var indexIdentity: FileSystem.Identity?
        var lastIndexCheck: Double = 0
        /// Stores being written: file name → bytes.
        var staged: [String: Staged] = [:]
        var lastGeneration: UInt64 = 0
        /// Reads not yet written to the index: file name → time.
        var pendingAccesses: [String: Double] = [:]
        /// Entries this process has read and checked against their CRC-32, with the stamp of the file it checked:
        /// while the file keeps that stamp, a hit needs neither the index nor the checksum.
        var verified: [String: Verified] = [:]
        var lastAccessFlush: Double = 0
        var cleaningTask: Task<Void, Never>?
        /// Stores waiting for their write, and whether a writer is taking them (see ``finishStore(_:)``).
        var writes: [(PendingStore, CheckedContinuation<Result<Int, CacheError>, Never>)] = []
        var isWriting = false
    }

    /// Opens the cache at `configuration.directory`, creating it (and rebuilding a missing or damaged index) as
    /// needed. `now` is the time source for entry times; `clock` paces periodic cleaning.
    ///
    /// Opening blocks on file I/O (the index's integrity check, a rebuild): make caches at start-up and keep them,
    /// as ``ImageCache`` and the manager do, rather than one per request.
    public init<C: Clock>(
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "osprey.disk-cache"),
        now: @escaping @Sendable () -> UnixTime = { .now },
        clock: C
    ) where C.Duration == Duration {
        self.configuration = configuration
        self.logger = logger
        self.now = now
        self.threadPool = .singleton
        self.index = Mutex(nil)
        self.reader = Mutex(nil)
        self.state = Mutex(State())
        reopenIndex()
        if let interval = configuration.cleaningInterval {
            let task = Task.detached { [weak self] in
                while (try? await clock.sleep(for: interval)) != nil {
                    guard let self else { return }
                    _ = await self.clean()
                }
            }
            state.withLock { $0.cleaningTask = task }
        }
    }

    /// Opens the cache with the system's wall clock, cleaning every ``Configuration/cleaningInterval``.
    public convenience init(
        configuration: Configuration = Configuration(), logger: Logger = Logger(label: "osprey.disk-cache")
    ) {
        self.init(configuration: configuration, logger: logger, clock: ContinuousClock())
    }

    deinit {
        let (accesses, task) = state.withLock { state in
            (takeAccesses(&state, at: now().seconds), state.cleaningTask)
        }
        writeAccesses(accesses)
        task?.cancel()
        broadcaster.finish()
    }

    // MARK: The public operations (each on the thread pool)

    /// The bytes stored for `key`, or from a read-only directory; `nil` on a miss. A damaged entry is removed and
    /// reported as a ``RemovalReason/damaged`` event.
    public func data(forKey key: String) async -> [UInt8]? {
        (try? await threadPool.runIfActive { self.loadData(forKey: key) }) ?? nil
    }

    /// ``data(forKey:)`` on the calling thread, which it blocks on file and index I/O: for callers that already run
    /// on a thread of their own (a job on NIO's thread pool that also decodes, say), where the thread-pool hop of
    /// the async form would cost more than the read.
    public func blockingData(forKey key: String) -> [UInt8]? {
        loadData(forKey: key)
    }

    /// Stores `bytes` for `key`, replacing what it held, with the origin's `validators` for revalidation. The bytes
    /// are readable at once, before the write ends.
    ///
    /// The entry leaves the cache when it has not been read for ``Configuration/maximumAge``, unless `expiration`
    /// gives it an expiry of its own (which the maximum age does not shorten), moved by reads as `extension` says
    /// (``Configuration/expirationExtension`` when `nil`). `extendedData` is kept with the entry (SDWebImage's
    /// extended data: what the caller wants to know about it later), read with ``extendedData(forKey:)``; a store
    /// replaces it with its own, `nil` and empty bytes meaning none.
    ///
    /// - Throws: ``CacheError/diskFull(key:)`` or ``CacheError/cacheWriteFailed(key:reason:)``; what was stored
    ///   before is kept. A memory-only cache (unusable directory) stores nothing and does not throw.
    public func store(
        _ bytes: [UInt8], forKey key: String, validators: Validators = Validators(),
        expiration: CacheExpiration? = nil, extension renewal: ExpirationExtension? = nil,
        extendedData: [UInt8]? = nil
    ) async throws(CacheError) {
        let attributes = StoreAttributes(
            expiration: expiration, extension: renewal ?? configuration.expirationExtension, extendedData: extendedData)
        try await finishStore(beginStore(bytes, forKey: key, validators: validators, attributes: attributes))
    }

    /// What a store keeps with the bytes besides the validators.
    struct StoreAttributes: Sendable {
        var expiration: CacheExpiration?
        var `extension`: ExpirationExtension = .cacheTime
        var extendedData: [UInt8]?

        /// The expiry rule of an entry stored at `time`; `nil` when it follows the maximum age.
        func expiryRule(storedAt time: Double) -> ExpiryRule? {
            expiration.map { ExpiryRule($0, extension: `extension`, storedAt: time) }
        }
    }

    /// A store begun by ``beginStore(_:forKey:validators:attributes:)``: staged, its write still to do.
    struct PendingStore: Sendable {
        let bytes: [UInt8]
        let key: String
        let validators: Validators
        let attributes: StoreAttributes
        /// `nil` when nothing was staged (the cache is memory-only).
        let generation: UInt64?
    }

    /// The first half of ``store(_:forKey:validators:expiration:extension:extendedData:)``, at once on the caller's
    /// thread: stages the bytes, so reads find them from now on. ``finishStore(_:)`` must follow; it writes them and
    /// ends the staging. The manager stages before it delivers an image and writes after, so a load that follows the
    /// delivery finds the bytes.
    func beginStore(
        _ bytes: [UInt8], forKey key: String, validators: Validators, attributes: StoreAttributes? = nil
    ) -> PendingStore {
        var attributes = attributes ?? StoreAttributes(extension: configuration.expirationExtension)
        if attributes.extendedData?.isEmpty == true { attributes.extendedData = nil }
        return PendingStore(
            bytes: bytes, key: key, validators: validators, attributes: attributes,
            generation: stage(bytes, forKey: key, validators: validators, attributes: attributes))
    }

    /// The second half of ``store(_:forKey:validators:expiration:extension:extendedData:)``: writes a staged store, then ends its staging.
    ///
    /// Stores are written by one writer at a time on the thread pool, which takes every store waiting when it starts
    /// and commits them in one index transaction (a group commit: one SQLite commit for many stores, where each
    /// used to take its own); a store waits at most for the batch before its own.
    func finishStore(_ pending: PendingStore) async throws(CacheError) {
        let result = await withCheckedContinuation { continuation in
            let startsWriter = state.withLock { state in
                state.writes.append((pending, continuation))
                defer { state.isWriting = true }
                return !state.isWriting
            }
            if startsWriter { startWriter() }
        }
        if let generation = pending.generation { unstage(Self.fileName(forKey: pending.key), generation: generation) }
        switch result {
        case .failure(let error): throw error
        case .success(let totalSize) where totalSize > configuration.sizeLimit:
            // Crossing the limit starts a cleaning, which this store does not wait for.
            Task { await self.clean() }
        default: break
        }
    }

    /// Writes the waiting stores, batch after batch, on the thread pool, until none waits. A pool that is shut down
    /// writes nothing (as a store then never did).
    private func startWriter() {
        let pool = threadPool
        Task {
            let written: Void? = try? await pool.runIfActive { self.writeWaitingStores() }
            guard written == nil else { return }
            // The pool is shut down: answer every waiting store without writing it.
            let waiting = self.state.withLock { state in
                state.isWriting = false
                defer { state.writes = [] }
                return state.writes
            }
            for (_, continuation) in waiting { continuation.resume(returning: .success(0)) }
        }
    }

    private func writeWaitingStores() {
        while true {
            let batch = state.withLock { state in
                defer { state.writes = [] }
                if state.writes.isEmpty { state.isWriting = false }
                return state.writes
            }
            guard !batch.isEmpty else { return }
            let results = saveBatch(batch.map(\.0))
            for ((_, continuation), result) in zip(batch, results) { continuation.resume(returning: result) }
        }
    }

    /// The index's record of `key`: size, times and validators.
    public func entry(forKey key: String) async -> Entry? {
        (try? await threadPool.runIfActive { self.loadEntry(named: Self.fileName(forKey: key)) }) ?? nil
    }

    /// Whether `key` has an entry (not checking its bytes).
    public func containsData(forKey key: String) async -> Bool {
        await entry(forKey: key) != nil
    }

    /// The keys among `keys` whose bytes a read would find now (as ``data(forKey:)`` would, without reading them):
    /// one look-up for all of them, where ``containsData(forKey:)`` is one each.
    public func containedKeys(among keys: [String]) async -> Set<String> {
        let names = Dictionary(keys.map { (Self.fileName(forKey: $0), $0) }, uniquingKeysWith: { first, _ in first })
        let present = (try? await threadPool.runIfActive { self.loadPresentNames(Array(names.keys)) }) ?? []
        return Set(present.compactMap { names[$0] })
    }

    /// Every entry, least recently used first.
    public func allEntries() async -> [Entry] {
        (try? await threadPool.runIfActive { self.loadAllEntries() }) ?? []
    }

    /// The entries' total size in bytes and their count: one indexed row, kept by the index as entries change.
    public func totals() async -> (size: Int, count: Int) {
        (try? await threadPool.runIfActive { self.loadTotals() }) ?? (0, 0)
    }

    /// The entries' total size in bytes: one indexed row.
    public var totalSize: Int {
        get async { await totals().size }
    }

    /// How many entries the cache holds: one indexed row.
    public var count: Int {
        get async { await totals().count }
    }

    /// Removes the entry for `key`.
    public func removeData(forKey key: String) async {
        let name = Self.fileName(forKey: key)
        state.withLock { _ = $0.staged.removeValue(forKey: name) }
        _ = try? await threadPool.runIfActive { self.remove(names: [name], reason: .removed) }
    }

    /// Removes every entry.
    public func removeAll() async {
        state.withLock { $0.staged = [:] }
        _ = try? await threadPool.runIfActive { self.removeEverything() }
    }

    /// Writes the access times not yet recorded and closes the index, which folds its write-ahead log into the index
    /// file and removes the log: the directory is then complete for any reader, even one that cannot use the log (a
    /// copy on a read-only mount). The cache is memory-only afterwards. A process that is about to exit calls it (the
    /// `osprey` commands do); other processes sharing the directory are not disturbed.
    public func close() async {
        _ = try? await threadPool.runIfActive {
            let accesses = self.state.withLock { self.takeAccesses(&$0, at: self.now().seconds) }
            self.writeAccesses(accesses)
            self.index.withLock { index in
                self.state.withLock { $0.isMemoryOnly = true }
                self.reader.withLock { $0 = nil }
                index = nil
            }
            self.packReaders.withLock { $0.removeAll() }
        }
    }

    /// Applies the limits now: entries past their own expiry or not read for the maximum age go, then least recently used entries until the
    /// size is under the target. Returns what it removed (also sent to ``events()``).
    ///
    /// One cleaning runs at a time in a process: a call made during another waits for it, then makes its own pass.
    @discardableResult
    public func clean() async -> [Event] {
        (try? await threadPool.runIfActive { self.cleaning.withLock { _ in self.cleanNow() } }) ?? []
    }

    /// A stream of what the cache removes, from now until the stream's consumer stops or the cache goes away.
    public func events() -> AsyncStream<Event> {
        broadcaster.subscribe()
    }

    /// Whether the cache is memory-only because its directory is unusable (or, read-only, because it holds no
    /// index yet).
    public var isMemoryOnly: Bool { state.withLock { $0.isMemoryOnly } }

    /// Whether the directory holds an index this cache could not open (a warning said why: damaged and not to be
    /// rebuilt by a read-only cache, or SQLite cannot be loaded): the cache then works in memory only and sees none of
    /// the entries on disk.
    public var hasUnreadableIndex: Bool { isMemoryOnly && FileSystem.exists(indexPath) }

    /// Throws, for a store under `key`, when the cache is memory-only (its directory unusable, or read-only with no
    /// index): a caller that reports what became of its store says so instead of counting a write that stored
    /// nothing as done.
    func requireDirectory(toStore key: String) throws(CacheError) {
        guard isMemoryOnly else { return }
        let reason =
            configuration.isReadOnly
            ? "the disk cache is read-only" : "the disk cache's directory cannot be used; caching in memory only"
        throw .cacheWriteFailed(key: key, reason: reason)
    }

    /// Whether the cache reads its directory but writes nothing: ``Configuration/isReadOnly``, or a directory this
    /// process cannot write (a read-only mount). Stores then fail with ``CacheError/cacheWriteFailed(key:reason:)``.
    public var isReadOnly: Bool { state.withLock { $0.isReadOnly } }
}
