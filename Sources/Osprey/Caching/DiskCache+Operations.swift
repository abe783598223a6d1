import Logging
import OspreyCodecs
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The disk cache's synchronous work, run on NIO's thread pool by the public methods in DiskCache.swift. One lock
// guards the index connection (every write), one the read-only connection lookups use, another the in-memory
// bookkeeping (staged stores, pending accesses, verified files); the last two are taken inside the first or alone,
// never around it; file reads happen outside all of them, and file renames and deletions inside index write
// transactions, which SQLite also serialises across processes.

extension DiskCache {
    static let indexName = "index.sqlite"
    /// Entries removed per index transaction while cleaning: small, so reads and writes interleave with a long clean.
    static let cleaningBatch = 256
    /// Reads are written to the index in batches: at most this many pending, or this old.
    static let accessBatch = 128
    static let accessFlushInterval = 1.0

    // MARK: Reading

    func loadData(forKey key: String) -> [UInt8]? {
        let name = Self.fileName(forKey: key)
        if let staged = state.withLock({ $0.staged[name]?.bytes }) { return staged }
        reopenIndexIfReplaced()
        if let bytes = loadEntryBytes(named: name, retrying: true) {
            recordAccess(to: name)
            return bytes
        }
        for directory in configuration.readOnlyDirectories {
            if let bytes = try? FileSystem.read(directory + "/" + name) { return bytes }
        }
        return nil
    }

    /// Verified entries remembered per process (about 100 bytes each); the map starts over when full.
    static let verifiedCapacity = 16_384

    /// The bytes of the entry `name` when the index has it and they match the index's size and CRC-32 (read from its
    /// pack when it is kept with the index, or with its record when an older index holds it as a blob). An expired
    /// entry is removed; so is a damaged one, unless a writer replaced or moved it meanwhile, in which case the read
    /// is tried again.
    ///
    /// The first read of a file entry in a process checks the whole file against the index's CRC-32 and remembers the
    /// file's stamp (size, inode, modification time); later reads whose file has the same stamp skip the index and
    /// the checksum, which would otherwise cost more than the read itself. Replacing, truncating or rewriting the
    /// file changes its stamp, so it is checked again. (Only a rewrite in place within the same clock tick as the
    /// checked version — a few milliseconds — keeps the stamp.)
    private func loadEntryBytes(named name: String, retrying: Bool) -> [UInt8]? {
        let path = configuration.directory + "/" + name
        // A shared cache does not serve what a private one sharing the directory stored as private.
        let isShared = configuration.isShared
        if let known = state.withLock({ $0.verified[name] }),
            !isExpired(known.record, lastAccess: known.record.accessed)
        {
            if isShared, known.record.isPrivate { return nil }
            if let (bytes, stamp) = (try? FileSystem.readStamped(path, expectedSize: known.record.size)) ?? nil,
                stamp == known.stamp
            {
                return bytes
            }
            _ = state.withLock { $0.verified.removeValue(forKey: name) }
        }
        guard
            let (record, inIndex) = withReader({ index throws(SQLiteDatabase.Error) in
                try index.recordAndBytes(named: name)
            }) ?? nil
        else { return nil }
        if isExpired(record, lastAccess: lastAccess(of: record)) {
            remove(names: [name], reason: .expired, ifUnchanged: record)
            return nil
        }
        if isShared, record.isPrivate { return nil }
        if record.pack != nil {
            if let bytes = packedBytes(of: record) { return bytes }
        } else if record.blob != nil {
            if let inIndex, inIndex.count == record.size,
                record.checksum == nil || record.checksum == inIndex.withUnsafeBytes(Self.checksum)
            {
                return inIndex
            }
        } else if let (bytes, stamp) = (try? FileSystem.readStamped(path, expectedSize: record.size)) ?? nil,
            record.checksum == nil || record.checksum == bytes.withUnsafeBytes(Self.checksum)
        {
            state.withLock { state in
                if state.verified.count >= Self.verifiedCapacity { state.verified = [:] }
                state.verified[name] = Verified(record: record, stamp: stamp)
            }
            return bytes
        }
        // Missing, truncated, grown or altered: damaged, unless the entry was replaced since the record was read.
        let removed = remove(names: [name], reason: .damaged, ifUnchanged: record)
        return removed.isEmpty && retrying ? loadEntryBytes(named: name, retrying: false) : nil
    }

    /// Whether `record`, last read at `lastAccess`, is past its own expiry (as that read moved it), or, without one,
    /// past the maximum age. (A verified entry's record is kept current by ``recordAccess(to:)``; an index record may
    /// lag behind the reads still pending.)
    private func isExpired(_ record: DiskIndex.Record, lastAccess: Double) -> Bool {
        if let eviction = record.eviction {
            let rule = ExpiryRule(expiry: eviction, renewal: record.renewal)
            let expiry = lastAccess > record.created ? rule.expiry(afterReadAt: lastAccess) : eviction
            return now().seconds >= expiry
        }
        guard let maximumAge = configuration.maximumAge else { return false }
        return lastAccess < now().seconds - maximumAge.seconds
    }

    private func lastAccess(of record: DiskIndex.Record) -> Double {
        max(record.accessed, state.withLock { $0.pendingAccesses[record.name] } ?? 0)
    }

    /// Notes a read; the batch is written to the index once it is large or a second old.
    private func recordAccess(to name: String) {
        let time = now().seconds
        let due = state.withLock { state -> [String: Double] in
            state.pendingAccesses[name] = time
            state.verified[name]?.record.accessed = time
            guard
                state.pendingAccesses.count >= Self.accessBatch
                    || time - state.lastAccessFlush >= Self.accessFlushInterval
            else { return [:] }
            return takeAccesses(&state, at: time)
        }
        writeAccesses(due)
    }

    /// Takes the pending reads out of `state`, to be written with ``writeAccesses(_:)`` once its lock is released.
    func takeAccesses(_ state: inout State, at time: Double) -> [String: Double] {
        defer {
            state.pendingAccesses = [:]
            state.lastAccessFlush = time
        }
        return state.pendingAccesses
    }

    /// Writes reads to the index. (Reads taken by two threads may land in either order: each row keeps the later
    /// of its time and the one written.)
    func writeAccesses(_ accesses: [String: Double]) {
        guard !accesses.isEmpty, !state.withLock({ $0.isReadOnly }) else { return }
        _ = withIndex { index throws(SQLiteDatabase.Error) in
            try index.transaction { () throws(SQLiteDatabase.Error) in try index.recordAccesses(accesses) }
        }
    }

    func loadEntry(named name: String) -> Entry? {
        if let staged = state.withLock({ $0.staged[name]?.entry }) { return staged }
        reopenIndexIfReplaced()
        return (withReader { index throws(SQLiteDatabase.Error) in try index.record(named: name) } ?? nil).map(
            Self.entry)
    }

    /// The names among `names` that a read would find: staged, or in the index, neither expired nor (in a shared
    /// cache) private. One query per ``DiskIndex/namesPerQuery`` names.
    func loadPresentNames(_ names: [String]) -> Set<String> {
        let staged = state.withLock { state in Set(names.filter { state.staged[$0] != nil }) }
        reopenIndexIfReplaced()
        let unstaged = names.filter { !staged.contains($0) }
        let records = withReader { index throws(SQLiteDatabase.Error) in try index.records(named: unstaged) } ?? []
        let isShared = configuration.isShared
        let present = records.filter { !isExpired($0, lastAccess: lastAccess(of: $0)) && !(isShared && $0.isPrivate) }
        return staged.union(present.map(\.name))
    }

    /// The extended data of the entry `name`: `nil` when it has none or there is no entry (or it has expired).
    func loadExtendedData(named name: String) -> [UInt8]? {
        reopenIndexIfReplaced()
        guard let record = withReader({ index throws(SQLiteDatabase.Error) in try index.record(named: name) }) ?? nil,
            !isExpired(record, lastAccess: lastAccess(of: record))
        else { return nil }
        return (withReader { index throws(SQLiteDatabase.Error) in try index.extendedData(named: name) } ?? nil) ?? nil
    }

    /// Writes the extended data of the entry `name`; returns whether there was one. A read-only cache writes nothing.
    func saveExtendedData(_ data: [UInt8]?, named name: String) -> Bool {
        guard !state.withLock({ $0.isReadOnly }) else { return false }
        reopenIndexIfReplaced()
        return withIndex { index throws(SQLiteDatabase.Error) in
            try index.transaction { () throws(SQLiteDatabase.Error) in try index.setExtendedData(data, named: name) }
        } ?? false
    }

    func loadAllEntries() -> [Entry] {
        reopenIndexIfReplaced()
        return (withReader { index throws(SQLiteDatabase.Error) in try index.allRecords() } ?? []).map(Self.entry)
    }

    func loadTotals() -> (size: Int, count: Int) {
        reopenIndexIfReplaced()
        return withReader { index throws(SQLiteDatabase.Error) in try index.totals() } ?? (0, 0)
    }

    private static func entry(_ record: DiskIndex.Record) -> Entry {
        Entry(
            key: record.key, fileName: record.name, isInIndex: record.isKeptWithIndex, size: record.size,
            created: UnixTime(seconds: record.created),
            lastAccess: UnixTime(seconds: record.accessed), expires: record.expires.map { UnixTime(seconds: $0) },
            cacheExpiry: record.eviction.map { UnixTime(seconds: $0) },
            validators: Validators(
                etag: record.etag, lastModified: record.lastModified,
                maxAge: record.expires.map { .seconds($0 - record.created) }, isPrivate: record.isPrivate))
    }

    // MARK: Removing

    /// Removes the entries `names` (rows, then files, in one transaction), publishes an event and returns what was
    /// removed. With `ifUnchanged`, only removes the entry if its record still equals that one.
    @discardableResult
    func remove(
        names: [String], reason: RemovalReason, ifUnchanged expected: DiskIndex.Record? = nil
    ) -> [DiskIndex.Record] {
        removeRecords(reason: reason) { index throws(SQLiteDatabase.Error) in
            if let expected, try index.record(named: expected.name)?.isSameEntry(as: expected) != true {
                return []
            }
            return try index.remove(named: names)
        }
    }

    func removeEverything() {
        removeRecords(reason: .removed) { index throws(SQLiteDatabase.Error) in try index.removeAll() }
        state.withLock { $0.pendingAccesses = [:] }
    }

    /// Deletes rows with `delete` and then their files, in one index write transaction (so no other process can
    /// store one of these names in between), and the packs that left empty once it commits (no row can name them
    /// again); forgets them as verified; publishes the event.
    @discardableResult
    private func removeRecords(
        reason: RemovalReason, _ delete: (DiskIndex) throws(SQLiteDatabase.Error) -> [DiskIndex.Record]
    ) -> [DiskIndex.Record] {
        let directory = configuration.directory
        // A read-only cache removes nothing: a damaged or expired entry is a miss, and stays for its owner to clean.
        guard !state.withLock({ $0.isReadOnly }) else { return [] }
        let (removed, emptied) =
            withIndex { index throws(SQLiteDatabase.Error) in
                try index.transaction { () throws(SQLiteDatabase.Error) -> ([DiskIndex.Record], [Int64]) in
                    let removed = try delete(index)
                    for record in removed where !record.isKeptWithIndex {
                        FileSystem.remove(directory + "/" + record.name)
                    }
                    return (removed, try index.removeEmptyPacks())
                }
            } ?? ([], [])
        removePackFiles(emptied)
        state.withLock { state in
            for record in removed { state.verified[record.name] = nil }
        }
        publish(removed, reason: reason)
        return removed
    }

    /// One cleaning pass, in batches of ``cleaningBatch`` entries per transaction, then the packs it left mostly empty
    /// compacted.
    func cleanNow() -> [Event] {
        guard !state.withLock({ $0.isReadOnly }) else { return [] }
        defer { compactPacks() }
        let time = now().seconds
        writeAccesses(state.withLock { takeAccesses(&$0, at: time) })
        var events: [Event] = []
        while true {
            let removed = removeRecords(reason: .expired) { index throws(SQLiteDatabase.Error) in
                try index.removeExpired(count: Self.cleaningBatch, at: time)
            }
            guard let event = Self.event(removed, reason: .expired) else { break }
            events.append(event)
        }
        if let maximumAge = configuration.maximumAge {
            let cutoff = time - maximumAge.seconds
            while true {
                let removed = removeRecords(reason: .expired) { index throws(SQLiteDatabase.Error) in
                    try index.removeLeastRecentlyUsed(count: Self.cleaningBatch, accessedBefore: cutoff)
                }
                guard let event = Self.event(removed, reason: .expired) else { break }
                events.append(event)
            }
        }
        guard loadTotals().size > configuration.sizeLimit else { return events }
        let target = Int(saturating: Double(configuration.sizeLimit) * configuration.sizeTargetRatio)
        while case let size = loadTotals().size, size > target,
            let batch = withIndex({ index throws(SQLiteDatabase.Error) in
                try index.leastRecentlyUsed(limit: Self.cleaningBatch)
            }), !batch.isEmpty
        {
            // Only as many as bring the size to the target.
            var excess = size - target
            let count = batch.prefix { record in
                defer { excess -= record.size }
                return excess > 0
            }.count
            let removed = removeRecords(reason: .sizeLimit) { index throws(SQLiteDatabase.Error) in
                try index.removeLeastRecentlyUsed(count: count)
            }
            guard let event = Self.event(removed, reason: .sizeLimit) else { break }
            events.append(event)
        }
        return events
    }

    private static func event(_ records: [DiskIndex.Record], reason: RemovalReason) -> Event? {
        guard !records.isEmpty else { return nil }
        return Event(
            reason: reason, keys: records.map { $0.key ?? $0.name }, bytes: records.reduce(0) { $0 + $1.size })
    }

    func publish(_ records: [DiskIndex.Record], reason: RemovalReason) {
        guard let event = Self.event(records, reason: reason) else { return }
        broadcaster.publish(event)
    }
}
