import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The disk cache's stores: staging (readable at once) and writing (one writer, one index transaction per batch),
// run on NIO's thread pool by DiskCache.swift. The locking rules are those of DiskCache+Operations.swift. A small
// entry's bytes are appended to a pack file inside the transaction that records them; a larger entry is written to a
// temporary file first and renamed into place inside it.
extension DiskCache {
    // MARK: Staging

    /// Makes `bytes` readable under `key` until the write of this store ends, and returns the store's generation;
    /// `nil` when the cache is memory-only (nothing will be written, so nothing is staged).
    func stage(
        _ bytes: [UInt8], forKey key: String, validators: Validators, attributes: StoreAttributes
    ) -> UInt64? {
        let name = Self.fileName(forKey: key)
        let time = now()
        let entry = Entry(
            key: key, fileName: name, isInIndex: configuration.keepsInIndex(size: bytes.count), size: bytes.count,
            created: time, lastAccess: time,
            expires: validators.maxAge.map { time.advanced(by: $0) },
            cacheExpiry: attributes.expiryRule(storedAt: time.seconds).map { UnixTime(seconds: $0.expiry) },
            validators: validators)
        return state.withLock { state in
            guard !state.isMemoryOnly, !state.isReadOnly else { return nil }
            state.lastGeneration += 1
            state.staged[name] = Staged(
                bytes: bytes, entry: entry, extendedData: attributes.extendedData, generation: state.lastGeneration)
            return state.lastGeneration
        }
    }

    /// Ends the staging of a store once its write has ended, unless a later store of the key staged its own.
    func unstage(_ name: String, generation: UInt64) {
        state.withLock { state in
            if state.staged[name]?.generation == generation { state.staged[name] = nil }
        }
    }

    // MARK: Writing

    /// Writes the entry and returns the bytes the cache takes afterwards (``diskUse(of:)``; 0 when nothing was
    /// written). Recreates the directory (and index) once if it was deleted underneath the cache. With a `generation`,
    /// the write lands only while that store is still staged: a removal or a later store of the key made since wins.
    func saveData(_ store: PendingStore) throws(CacheError) -> Int {
        let key = store.key
        do {
            return try writeEntry(store)
        } catch let error where error.isMissing {
            reopenIndex()
            do {
                return try writeEntry(store)
            } catch {
                throw Self.storeError(error, key: key)
            }
        } catch {
            throw Self.storeError(error, key: key)
        }
    }

    /// Writes `stores` in one index transaction; when that fails, one at a time (so each gets its own outcome and a
    /// deleted directory is recreated). Each result is the bytes the cache takes afterwards, 0 when nothing was written.
    func saveBatch(_ stores: [PendingStore]) -> [Result<Int, CacheError>] {
        func one(_ store: PendingStore) -> Result<Int, CacheError> {
            Result { () throws(CacheError) in try saveData(store) }
        }
        guard stores.count > 1, let totals = try? writeEntries(stores) else { return stores.map(one) }
        return totals.map { .success($0) }
    }

    private static func storeError(_ error: FileSystem.Error, key: String) -> CacheError {
        error.isDiskFull ? .diskFull(key: key) : .cacheWriteFailed(key: key, reason: error.description)
    }

    private func writeEntry(_ store: PendingStore) throws(FileSystem.Error) -> Int {
        let (bytes, key, generation) = (store.bytes, store.key, store.generation)
        let directory = configuration.directory
        let name = Self.fileName(forKey: key)
        let (isMemoryOnly, isReadOnly, isCurrent) = state.withLock {
            ($0.isMemoryOnly, $0.isReadOnly, Self.isCurrent(generation, of: name, in: $0))
        }
        if isReadOnly { throw FileSystem.Error(operation: "store in", path: directory, code: EROFS) }
        // Memory-only, or superseded already: nothing to write.
        guard !isMemoryOnly, isCurrent else { return 0 }
        // A small entry goes into a pack file, under the index's write lock; a larger one is written to a temporary
        // file, outside it.
        let inIndex = configuration.keepsInIndex(size: bytes.count)
        let direct = configuration.writesAroundPageCache
        let temporary = inIndex ? nil : try FileSystem.writeTemporary(bytes, in: directory, direct: direct)
        // SQLite goes on writing to an index whose file was deleted (with its directory, say) as if nothing happened:
        // the caller reopens it, as it does when the temporary file cannot be created.
        let indexPath = directory + "/" + Self.indexName
        if inIndex, !FileSystem.exists(indexPath) {
            throw FileSystem.Error(operation: "open", path: indexPath, code: ENOENT)
        }
        let record = Self.record(of: store, name: name, at: now().seconds)
        // The row first, then the rename, in one transaction: a failed row write leaves the old entry untouched, and
        // no other process's cleaning can delete the file between the rename and the row.
        let final = directory + "/" + name
        var fileError: FileSystem.Error?
        var renamed = false
        var emptied: [Int64] = []
        let placement = packPlacement
        let outcome = index.withLock { index -> Result<Int, SQLiteDatabase.Error>? in
            // Checked again under the index lock, which this write holds until it commits: a removal of the key
            // (which ends the staging first, then deletes the row under this lock) either stops it here or deletes
            // what it wrote.
            guard let index, let extendedData = state.withLock({ Self.extendedData(of: store, name: name, in: $0) })
            else { return nil }
            return Result { () throws(SQLiteDatabase.Error) in
                try index.transaction { () throws(SQLiteDatabase.Error) -> Int in
                    renamed = try Self.writeRow(
                        record, extendedData: extendedData, bytes: bytes, temporary: temporary, to: final,
                        packs: placement, in: index, fileError: &fileError)
                    emptied = try index.removeEmptyPacks()
                    return try Self.diskUse(of: index)
                }
            }
        }
        _ = state.withLock { $0.verified.removeValue(forKey: name) }
        switch outcome {
        case nil:
            if let temporary { FileSystem.remove(temporary) }
            return 0
        case .success(let total):
            storeCommits.wrappingAdd(1, ordering: .relaxed)
            removePackFiles(emptied)
            return total
        case .failure(let error):
            if let fileError { throw fileError }
            // The commit failed after the rename: the row still describes the old bytes, so drop the new file
            // (the next read of the old row finds it missing and removes it).
            if let temporary { FileSystem.remove(renamed ? final : temporary) }
            logger.warning("disk cache index write failed", metadata: ["osprey.error": "\(error)"])
            throw .indexWriteFailed(directory, isDiskFull: error.isDiskFull)
        }
    }

    /// ``writeEntry(_:)`` for several stores, in one transaction: file entries are
    /// written to temporary files first, then every row and rename is done under one commit. Throws (having written
    /// nothing, or rolled back) when any step fails; the caller then writes them one by one.
    private func writeEntries(_ stores: [PendingStore]) throws(FileSystem.Error) -> [Int] {
        let directory = configuration.directory
        let (isMemoryOnly, isReadOnly) = state.withLock { ($0.isMemoryOnly, $0.isReadOnly) }
        if isReadOnly { throw FileSystem.Error(operation: "store in", path: directory, code: EROFS) }
        guard !isMemoryOnly else { return stores.map { _ in 0 } }
        let indexPath = directory + "/" + Self.indexName
        guard FileSystem.exists(indexPath) else {
            throw FileSystem.Error(operation: "open", path: indexPath, code: ENOENT)
        }
        struct Prepared {
            var record: DiskIndex.Record
            let store: PendingStore
            let temporary: String?
        }
        var prepared: [Prepared] = []
        prepared.reserveCapacity(stores.count)
        let time = now().seconds
        let direct = configuration.writesAroundPageCache
        do throws(FileSystem.Error) {
            for store in stores {
                let inIndex = configuration.keepsInIndex(size: store.bytes.count)
                let record = Self.record(of: store, name: Self.fileName(forKey: store.key), at: time)
                let temporary =
                    inIndex ? nil : try FileSystem.writeTemporary(store.bytes, in: directory, direct: direct)
                prepared.append(Prepared(record: record, store: store, temporary: temporary))
            }
        } catch {
            for item in prepared { if let temporary = item.temporary { FileSystem.remove(temporary) } }
            throw error
        }
        var written = [Bool](repeating: false, count: prepared.count)
        var renamed: [String] = []
        var emptied: [Int64] = []
        let placement = packPlacement
        let outcome = index.withLock { index -> Result<Int, SQLiteDatabase.Error>? in
            guard let index else { return nil }
            return Result { () throws(SQLiteDatabase.Error) in
                try index.transaction { () throws(SQLiteDatabase.Error) -> Int in
                    for position in prepared.indices {
                        let record = prepared[position].record
                        let name = record.name
                        // Under the index lock, as in a single write: a removal or a later store of the key wins.
                        guard
                            let extendedData = state.withLock({
                                Self.extendedData(of: prepared[position].store, name: name, in: $0)
                            })
                        else { continue }
                        var fileError: FileSystem.Error?
                        let final = directory + "/" + name
                        if try Self.writeRow(
                            record, extendedData: extendedData, bytes: prepared[position].store.bytes,
                            temporary: prepared[position].temporary, to: final, packs: placement, in: index,
                            fileError: &fileError)
                        {
                            renamed.append(final)
                        }
                        written[position] = true
                    }
                    emptied = try index.removeEmptyPacks()
                    return try Self.diskUse(of: index)
                }
            }
        }
        state.withLock { state in
            for item in prepared { state.verified.removeValue(forKey: item.record.name) }
        }
        switch outcome {
        case .success(let total):
            storeCommits.wrappingAdd(1, ordering: .relaxed)
            removePackFiles(emptied)
            for (position, item) in prepared.enumerated() where !written[position] {
                if let temporary = item.temporary { FileSystem.remove(temporary) }
            }
            return written.map { $0 ? total : 0 }
        case nil:
            // Memory-only since: nothing was written.
            for item in prepared { if let temporary = item.temporary { FileSystem.remove(temporary) } }
            return prepared.map { _ in 0 }
        case .failure:
            // Rolled back: the renamed files belong to rows that were not written (the old rows, if any, no longer
            // match them and are removed when read); the others are still temporary.
            for final in renamed { FileSystem.remove(final) }
            for item in prepared {
                if let temporary = item.temporary, !renamed.contains(directory + "/" + item.record.name) {
                    FileSystem.remove(temporary)
                }
            }
            throw FileSystem.Error(operation: "write the index of", path: directory, code: EIO)
        }
    }

    /// One entry's bytes and row, inside an index write transaction: without a `temporary` file, the bytes appended
    /// to a pack and the row pointing at them (the file of a file entry it replaces removed, as removals do); with
    /// one, the row, then the file renamed into place. Returns whether a file was renamed; a failed pack write or
    /// rename is kept in `fileError` and aborts the transaction (SQLITE_ABORT), so the row is rolled back. (The
    /// caller deletes the packs the replaced entries left empty, in the same transaction.)
    private static func writeRow(
        _ record: DiskIndex.Record, extendedData: [UInt8]?, bytes: [UInt8], temporary: String?, to final: String,
        packs: PackPlacement, in index: DiskIndex, fileError: inout FileSystem.Error?
    ) throws(SQLiteDatabase.Error) -> Bool {
        var record = record
        let previous = temporary == nil ? try index.record(named: record.name) : nil
        if temporary == nil {
            let (pack, offset) = try append(bytes, in: index, placement: packs, fileError: &fileError)
            record.pack = pack
            record.packOffset = Int64(offset)
        }
        try index.upsert(record, extendedData: extendedData)
        if let temporary {
            do throws(FileSystem.Error) {
                try FileSystem.rename(temporary, to: final)
                return true
            } catch {
                fileError = error
                throw SQLiteDatabase.Error(code: 4, message: "rename failed")  // SQLITE_ABORT: roll back
            }
        }
        if let previous, !previous.isKeptWithIndex { FileSystem.remove(final) }
        return false
    }

    /// The bytes the cache takes on disk, as its limit counts them after a write: its entries, and the bytes its packs
    /// still hold for entries since removed or replaced, which the cleaning that crossing the limit starts compacts.
    private static func diskUse(of index: DiskIndex) throws(SQLiteDatabase.Error) -> Int {
        try index.totals().size + index.deadPackBytes()
    }

    /// Whether a write of store `generation` (`nil`: an unstaged write) may still land.
    private static func isCurrent(_ generation: UInt64?, of name: String, in state: State) -> Bool {
        generation == nil || state.staged[name]?.generation == generation
    }

    /// The extended data a write of `store` records: what its staging holds now (``setExtendedData(_:forKey:)`` may
    /// have changed it since the store began); `nil` when the write may no longer land.
    private static func extendedData(of store: PendingStore, name: String, in state: State) -> [UInt8]?? {
        guard let generation = store.generation else { return .some(store.attributes.extendedData) }
        guard let staged = state.staged[name], staged.generation == generation else { return nil }
        return .some(staged.extendedData)
    }

    /// The index record of `store`, written at `time`.
    private static func record(of store: PendingStore, name: String, at time: Double) -> DiskIndex.Record {
        let (bytes, validators) = (store.bytes, store.validators)
        let rule = store.attributes.expiryRule(storedAt: time)
        return DiskIndex.Record(
            name: name, key: store.key, size: bytes.count, checksum: bytes.withUnsafeBytes(Self.checksum),
            created: time, accessed: time, expires: validators.maxAge.map { time + $0.seconds }, etag: validators.etag,
            lastModified: validators.lastModified, isPrivate: validators.isPrivate, eviction: rule?.expiry,
            renewal: rule?.renewal)
    }
}
