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

// The disk cache's index connections: opened (or rebuilt from the directory when damaged), reopened when another
// process replaced the index file, and used under their locks (`withIndex` for writes, `withReader` for lookups).
extension DiskCache {
    /// Seconds between two checks that the index file is still the one the cache has open.
    static let indexCheckInterval = 2.0

    var indexPath: String { configuration.directory + "/" + Self.indexName }

    /// Opens (or reopens) the index, making the cache memory-only when that fails; forgets what it knew of the
    /// directory's files.
    func reopenIndex() {
        index.withLock { index in
            reader.withLock { $0 = nil }
            index = nil  // closed before another is opened, so a reopen never holds two connections
            index = openIndex()
            let (isMemoryOnly, isReadOnly) = (index == nil, index?.isReadOnly ?? false)
            if !isMemoryOnly, !isReadOnly {
                // Without it, reads share the writer's connection: slower under writes, not wrong.
                let path = indexPath
                reader.withLock { $0 = try? DiskIndex(readerOf: path) }
            }
            packReaders.withLock { $0.removeAll() }
            let identity = FileSystem.identity(of: indexPath)
            let time = now().seconds
            state.withLock { state in
                state.isMemoryOnly = isMemoryOnly
                state.isReadOnly = isReadOnly
                state.indexIdentity = identity
                state.lastIndexCheck = time
                state.verified = [:]
                state.pendingAccesses = [:]
            }
        }
    }

    /// Reopens the index when the file at its path is no longer the one open — the directory was deleted or replaced
    /// from outside (SQLite goes on reading an unlinked file as if nothing happened) — or when one appeared where
    /// there was none. Checks at most every ``indexCheckInterval`` seconds: one `stat`.
    func reopenIndexIfReplaced() {
        let time = now().seconds
        let expected = state.withLock { state -> FileSystem.Identity?? in
            guard abs(time - state.lastIndexCheck) >= Self.indexCheckInterval else { return .none }
            state.lastIndexCheck = time
            return .some(state.indexIdentity)
        }
        guard case .some(let expected) = expected, FileSystem.identity(of: indexPath) != expected else {
            // Due, and the index is the one open: a moment to let go of packs deleted since (by any process).
            if case .some = expected { packReaders.withLock { $0.closeDeleted() } }
            return
        }
        logger.warning(
            "disk cache index was removed or replaced from outside, starting afresh",
            metadata: ["osprey.cache": "\(configuration.directory)"])
        reopenIndex()
    }

    /// Opens the index: for a read-only cache, the existing one as it is (none: the cache is empty); otherwise
    /// creating the directory and rebuilding a new or damaged index from the files present, or reading the existing
    /// one when the directory cannot be written. `nil` (with one warning) when there is nothing usable: the cache is
    /// then memory-only.
    func openIndex() -> sending DiskIndex? {
        let directory = configuration.directory
        let path = indexPath
        if configuration.isReadOnly {
            return FileSystem.exists(path) ? openForReading(path) : nil
        }
        do {
            try FileSystem.createDirectory(directory)
        } catch {
            logger.warning(
                "disk cache unavailable, caching in memory only",
                metadata: ["osprey.cache": "\(directory)", "osprey.error": "\(error)"])
            return nil
        }
        guard FileSystem.isWritableDirectory(directory) else {
            if FileSystem.exists(path), let index = openForReading(path) {
                logger.warning(
                    "disk cache directory is not writable: reading it, storing nothing",
                    metadata: ["osprey.cache": "\(directory)"])
                return index
            }
            logger.warning(
                "disk cache directory is not writable, caching in memory only",
                metadata: ["osprey.cache": "\(directory)"])
            return nil
        }
        do {
            return try openAndRebuild(path)
        } catch let error where error.isCorruption {
            logger.warning(
                "disk cache index damaged, rebuilding it",
                metadata: ["osprey.cache": "\(directory)", "osprey.error": "\(error)"])
            for suffix in ["", "-wal", "-shm"] { FileSystem.remove(path + suffix) }
            if let index = try? openAndRebuild(path) { return index }
        } catch {
            logger.warning(
                "disk cache index cannot be opened, caching in memory only",
                metadata: ["osprey.cache": "\(directory)", "osprey.error": "\(error)"])
            return nil
        }
        logger.warning(
            "disk cache index cannot be opened, caching in memory only", metadata: ["osprey.cache": "\(directory)"])
        return nil
    }

    /// Opens an existing index for reading only: shared with its writers while one has it open (its `-wal` file
    /// exists then), else as an immutable file, which SQLite reads without creating its `-wal` and `-shm` files beside
    /// it (a read-only connection would, and leave them) — the only way at all in a directory nobody can write (a
    /// read-only mount, `chattr +i`). `nil`, with a warning, when neither works.
    private func openForReading(_ path: String) -> sending DiskIndex? {
        let immutable =
            !FileSystem.exists(path + "-wal") || !FileSystem.isWritableDirectory(configuration.directory)
        do {
            return try DiskIndex(readingAt: path, immutable: immutable)
        } catch {
            if !immutable, let index = try? DiskIndex(readingAt: path, immutable: true) { return index }
            logger.warning(
                "disk cache index cannot be read",
                metadata: ["osprey.cache": "\(configuration.directory)", "osprey.error": "\(error)"])
            return nil
        }
    }

    /// Opens the index and fills a new one from the directory. When another process is creating or opening the same
    /// index at that moment, SQLite can answer "busy" without waiting: that is retried, with a growing pause, for up
    /// to about 10 s.
    private func openAndRebuild(_ path: String) throws(SQLiteDatabase.Error) -> DiskIndex {
        var pause: UInt32 = 1_000  // microseconds
        var waited: UInt32 = 0
        while true {
            do {
                let index = try DiskIndex(path: path)
                if index.isNew {
                    try rebuild(index)
                }
                return index
            } catch let error where error.isBusy && waited < 10_000_000 {
                usleep(pause)
                waited += pause
                pause = min(pause * 2, 200_000)
            }
        }
    }

    /// Reads the directory into a new index: every file named like an entry, with its size and modification time;
    /// keys and checksums are unknown. Temporary files an interrupted write left behind are deleted, and so are pack
    /// files (what they held was known only to the index that was lost).
    private func rebuild(_ index: DiskIndex) throws(SQLiteDatabase.Error) {
        let directory = configuration.directory
        let files = FileSystem.entries(of: directory)
        for file in files where file.name.hasPrefix(".tmp-") && file.modified < now().seconds - 3600 {
            FileSystem.remove(directory + "/" + file.name)
        }
        let entries = files.filter { Self.isEntryName($0.name) }
        let placement = packPlacement
        try index.transaction { () throws(SQLiteDatabase.Error) in
            // Those of another process that opened the new index first are listed in it by now.
            try Self.removeUnlistedPacks(among: files.map(\.name), in: index, placement: placement)
            // Another process may have opened the new index first and stored entries already: keep its records.
            for file in entries {
                try index.insertIfAbsent(
                    DiskIndex.Record(
                        name: file.name, key: nil, size: file.size, checksum: nil, created: file.modified,
                        accessed: file.modified))
            }
        }
        if !entries.isEmpty {
            logger.info(
                "disk cache index rebuilt",
                metadata: ["osprey.cache": "\(directory)", "osprey.entries": "\(entries.count)"])
        }
    }

    /// Runs `body` with the index under the lock; `nil` when memory-only or when the index fails.
    func withIndex<Result: Sendable>(_ body: (DiskIndex) throws(SQLiteDatabase.Error) -> Result) -> Result? {
        index.withLock { index in
            guard let index else { return nil }
            do {
                return try body(index)
            } catch {
                logger.warning("disk cache index error", metadata: ["osprey.error": "\(error)"])
                return nil
            }
        }
    }

    /// Runs the read `body` on the reader connection, which the writer's transactions do not hold up; on the index's
    /// own connection when there is no reader. `nil` when memory-only or when the index fails.
    func withReader<Result: Sendable>(_ body: (DiskIndex) throws(SQLiteDatabase.Error) -> Result) -> Result? {
        let outcome = reader.withLock { reader -> Result?? in
            guard let reader else { return .none }
            do {
                return .some(try body(reader))
            } catch {
                logger.warning("disk cache index error", metadata: ["osprey.error": "\(error)"])
                return .some(nil)
            }
        }
        if case .some(let result) = outcome { return result }
        return withIndex(body)
    }
}
