import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The disk cache's pack files: where small entries' bytes are appended, one `pack-<id>` file after another in the
// cache directory, so that storing one costs a write at the end of an open-ended file and a row, not a file of its own
// (an inode, a temporary name, a rename) nor its bytes passing twice through SQLite's log. Appends happen inside the
// index's write transactions (DiskCache+Writing.swift), which SQLite also serialises across processes; the `packs`
// table says how far each file is written and how many of its bytes entries still use. Removing an entry only updates
// that count: a pack no entry uses is deleted with the transaction that emptied it, and cleaning moves the entries of
// a pack mostly freed into the newest one and deletes it.

extension DiskCache {
    /// Where a store puts the bytes it keeps with the index: pack files in `directory`, a new one begun when the
    /// newest would grow past `limit` bytes.
    struct PackPlacement: Sendable {
        let directory: String
        let limit: Int

        func path(of pack: Int64) -> String { directory + "/" + DiskCache.packPrefix + String(pack) }
    }

    static let packPrefix = "pack-"

    /// The cache's pack placement: packs of an eighth of the size limit, between 256 KiB and 64 MiB, so that the
    /// space an unfinished pack holds for removed entries stays a small part of the limit.
    var packPlacement: PackPlacement {
        PackPlacement(
            directory: configuration.directory, limit: min(64 << 20, max(256 << 10, configuration.sizeLimit / 8)))
    }

    /// The id of the pack named `name`, when it is a pack file's name.
    static func packID(ofFileNamed name: String) -> Int64? {
        guard name.hasPrefix(packPrefix), let id = Int64(name.dropFirst(packPrefix.count)), id > 0 else { return nil }
        return String(id) == name.dropFirst(packPrefix.count) ? id : nil
    }

    /// The bytes `record` says its pack holds, when they match its CRC-32; `nil` when the pack is missing, shorter or
    /// different there (deleted, truncated or altered from outside, or compacted away since the record was read).
    ///
    /// Read through a descriptor kept open from an earlier read when there is one; what it reads is checked, and read
    /// again through a fresh one before it counts as damaged, since a kept descriptor may name a pack file deleted
    /// since (by another process's cleaning, or with a lost index) whose id a new pack has taken.
    func packedBytes(of record: DiskIndex.Record) -> [UInt8]? {
        guard let pack = record.pack, let offset = record.packOffset else { return nil }
        // An empty entry takes nothing in its pack, so it does not keep the pack from being deleted: nothing to read.
        if record.size == 0 { return [] }
        for fresh in [false, true] {
            let kept = fresh ? nil : packReaders.withLock { $0.descriptor(of: pack) }
            guard let descriptor = kept ?? PackDescriptor(path: packPlacement.path(of: pack)) else { return nil }
            if kept == nil { packReaders.withLock { $0.keep(descriptor, for: pack) } }
            if let bytes = descriptor.read(at: Int(offset), count: record.size),
                record.checksum == nil || record.checksum == bytes.withUnsafeBytes(Self.checksum)
            {
                return bytes
            }
            packReaders.withLock { $0.forget(pack) }
            if kept == nil { return nil }
        }
        return nil
    }

    /// Deletes the files of packs whose rows a committed transaction deleted, and forgets their descriptors.
    func removePackFiles(_ packs: [Int64]) {
        let placement = packPlacement
        for pack in packs {
            FileSystem.remove(placement.path(of: pack))
            packReaders.withLock { $0.forget(pack) }
        }
    }

    /// Inside an index write transaction: appends `bytes` to the newest pack (a new one when they would take it past
    /// the limit, or when it is `excluded`, the pack being compacted) and returns where they went. A failed write is
    /// kept in `fileError` and aborts the transaction (SQLITE_ABORT), so nothing refers to what it wrote.
    static func append(
        _ bytes: [UInt8], in index: DiskIndex, placement: PackPlacement, excluding excluded: Int64? = nil,
        fileError: inout FileSystem.Error?
    ) throws(SQLiteDatabase.Error) -> (pack: Int64, offset: Int) {
        var (pack, offset) = try index.appendPosition(size: bytes.count, limit: placement.limit)
        if pack == excluded { (pack, offset) = (try index.newPack(), 0) }
        do throws(FileSystem.Error) {
            try FileSystem.writeBytes(bytes, to: placement.path(of: pack), at: offset)
        } catch {
            fileError = error
            throw SQLiteDatabase.Error(code: 4, message: "pack write failed: \(error)")  // SQLITE_ABORT: roll back
        }
        try index.extendPack(pack, by: bytes.count)
        return (pack, offset)
    }

    /// Inside an index write transaction (no other process appends meanwhile): deletes the pack files among `names`
    /// (a directory listing) that the index does not list, which an index lost and rebuilt left behind.
    static func removeUnlistedPacks(
        among names: [String], in index: DiskIndex, placement: PackPlacement
    ) throws(SQLiteDatabase.Error) {
        let listed = Set(try index.packs().map(\.id))
        for name in names {
            if let id = packID(ofFileNamed: name), !listed.contains(id) { FileSystem.remove(placement.path(of: id)) }
        }
    }

    /// Packs compacted per cleaning pass, at most.
    static let packsCompactedPerClean = 8

    /// Moves the entries of the packs that removals left more than half empty into the newest pack, or a new one, and
    /// deletes them; an entry whose bytes no longer match its checksum is removed instead. One transaction per pack;
    /// its file is deleted once that commits.
    ///
    /// A pack is compacted once its entries fill less than half of it, or less than the size target ratio when that
    /// is higher: then what the packs hold for removed entries is never more than what the entries left by the cleaning
    /// take, and the two together stay within the size limit that the next write checks.
    func compactPacks() {
        guard !state.withLock({ $0.isReadOnly }) else { return }
        let placement = packPlacement
        let ratio = max(0.5, configuration.sizeTargetRatio)
        let sparse =
            withIndex { index throws(SQLiteDatabase.Error) in
                try index.sparsePacks(ratio: ratio, limit: Self.packsCompactedPerClean)
            } ?? []
        for pack in sparse {
            guard
                let damaged = withIndex({ index throws(SQLiteDatabase.Error) -> [DiskIndex.Record] in
                    try index.transaction { () throws(SQLiteDatabase.Error) -> [DiskIndex.Record] in
                        try Self.compact(pack.id, in: index, placement: placement)
                    }
                })
            else { continue }
            removePackFiles([pack.id])
            if !damaged.isEmpty {
                state.withLock { state in
                    for record in damaged { state.verified[record.name] = nil }
                }
                publish(damaged, reason: .damaged)
            }
        }
    }

    /// Moves pack `id`'s entries and deletes its row, inside a write transaction; returns the entries removed as
    /// damaged.
    private static func compact(
        _ id: Int64, in index: DiskIndex, placement: PackPlacement
    ) throws(SQLiteDatabase.Error) -> [DiskIndex.Record] {
        let source = placement.path(of: id)
        var damaged: [DiskIndex.Record] = []
        for record in try index.records(inPack: id) {
            guard let offset = record.packOffset,
                let bytes = (try? FileSystem.read(source, at: Int(offset), count: record.size)) ?? nil,
                record.checksum == nil || record.checksum == bytes.withUnsafeBytes(checksum)
            else {
                damaged += try index.remove(named: [record.name])
                continue
            }
            var fileError: FileSystem.Error?
            let (target, position) = try append(
                bytes, in: index, placement: placement, excluding: id, fileError: &fileError)
            _ = try index.movePacked(record, to: target, offset: position)
        }
        try index.removePack(id)
        return damaged
    }
}

/// An open pack file, read with `pread`; closed when the last reader lets it go.
///
/// `@unchecked Sendable`: it owns a file descriptor, which it only reads through (`pread` at an offset, safe from any
/// thread) and closes once, in `deinit`.
final class PackDescriptor: @unchecked Sendable {
    private let descriptor: Int32

    init?(path: String) {
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
    }

    deinit { close(descriptor) }

    /// `count` bytes from `offset`; `nil` when the file ends before them or cannot be read.
    func read(at offset: Int, count: Int) -> [UInt8]? {
        var failure: Int32 = 0
        let bytes = FileSystem.read(descriptor, at: offset, count: count, failure: &failure)
        return failure == 0 ? bytes : nil
    }

    /// Whether the file has been deleted (no name links to it any more).
    var isDeleted: Bool {
        var status = stat()
        return fstat(descriptor, &status) != 0 || status.st_nlink == 0
    }
}

/// The pack files a cache keeps open for reading: the few most recently used.
struct PackReaders {
    static let capacity = 8
    private var open: [(pack: Int64, descriptor: PackDescriptor)] = []

    /// The descriptor kept for `pack`, now the most recently used.
    mutating func descriptor(of pack: Int64) -> PackDescriptor? {
        guard let position = open.firstIndex(where: { $0.pack == pack }) else { return nil }
        let entry = open.remove(at: position)
        open.append(entry)
        return entry.descriptor
    }

    /// Keeps `descriptor` for `pack`, letting the least recently used go past ``capacity``.
    mutating func keep(_ descriptor: PackDescriptor, for pack: Int64) {
        open.removeAll { $0.pack == pack }
        open.append((pack, descriptor))
        if open.count > Self.capacity { open.removeFirst() }
    }

    mutating func forget(_ pack: Int64) {
        open.removeAll { $0.pack == pack }
    }

    mutating func closeDeleted() {
        open.removeAll { $0.descriptor.isDeleted }
    }

    mutating func removeAll() {
        open = []
    }
}
