// The pack files' side of the index: where small entries' bytes are appended, how much of each pack is still alive,
// and the moves that compact sparse packs (DiskIndex's own comment says how entries point into them).
extension DiskIndex {
    /// One pack file as the index knows it: the bytes written to it, and those of the entries still in it.
    struct Pack: Equatable, Sendable {
        var id: Int64
        var length: Int
        var live: Int
    }

    /// Where `size` more bytes go, inside a write transaction: the end of the newest pack, or the start of a new one
    /// when they would take the newest past `limit` (a pack holds at least one entry, however large). The caller
    /// writes them there, then calls ``extendPack(_:by:)`` in the same transaction. Under SQLite's write lock no other
    /// process appends at the same time; what a writer that crashed before its commit wrote past the recorded length
    /// is written over.
    func appendPosition(size: Int, limit: Int) throws(SQLiteDatabase.Error) -> (pack: Int64, offset: Int) {
        if let row = try database.query("SELECT id, length FROM packs ORDER BY id DESC LIMIT 1").first,
            let id = row[0].integer, let length = row[1].integer.map(Int.init), length == 0 || length + size <= limit
        {
            return (id, length)
        }
        return (try newPack(), 0)
    }

    /// Adds an empty pack and returns its id. An index never gives a committed pack's id again, so no row of it can
    /// name a pack deleted since; only a lost and rebuilt index starts again from 1.
    func newPack() throws(SQLiteDatabase.Error) -> Int64 {
        guard
            let id = try database.query("INSERT INTO packs(length, live) VALUES (0, 0) RETURNING id").first?.first?
                .integer
        else {
            throw SQLiteDatabase.Error(code: 1, message: "no row id for the new pack")  // SQLITE_ERROR
        }
        return id
    }

    /// Records `count` bytes appended to pack `id`.
    func extendPack(_ id: Int64, by count: Int) throws(SQLiteDatabase.Error) {
        try database.query("UPDATE packs SET length = length + ? WHERE id = ?", [.integer(Int64(count)), .integer(id)])
    }

    /// Every pack, oldest first.
    func packs() throws(SQLiteDatabase.Error) -> [Pack] {
        try database.query("SELECT id, length, live FROM packs ORDER BY id").map(Self.pack)
    }

    /// The bytes the packs hold for entries since removed or replaced.
    func deadPackBytes() throws(SQLiteDatabase.Error) -> Int {
        Int(try database.query("SELECT COALESCE(SUM(length - live), 0) FROM packs").first?.first?.integer ?? 0)
    }

    /// Deletes the packs no entry is in any more and returns their ids, for their files to be deleted.
    func removeEmptyPacks() throws(SQLiteDatabase.Error) -> [Int64] {
        try database.query("DELETE FROM packs WHERE live <= 0 RETURNING id").compactMap { $0[0].integer }
    }

    /// The packs whose entries fill less than `ratio` of them, emptiest first.
    func sparsePacks(ratio: Double, limit: Int) throws(SQLiteDatabase.Error) -> [Pack] {
        try database.query(
            "SELECT id, length, live FROM packs WHERE live < length * ? ORDER BY live LIMIT ?",
            [.real(ratio), .integer(Int64(limit))]
        ).map(Self.pack)
    }

    /// A pack from a row of `id, length, live`.
    private static func pack(_ row: [SQLiteDatabase.Value]) -> Pack {
        Pack(id: row[0].integer ?? 0, length: Int(row[1].integer ?? 0), live: Int(row[2].integer ?? 0))
    }

    /// The records of the entries in pack `id`.
    func records(inPack id: Int64) throws(SQLiteDatabase.Error) -> [Record] {
        try database.query("SELECT \(columns) FROM entries WHERE pack = ?", [.integer(id)]).map(Self.record)
    }

    /// Points the entry `name` at its bytes' new place, if it is still where `record` says they were; returns whether
    /// it was.
    func movePacked(
        _ record: Record, to pack: Int64, offset: Int
    ) throws(SQLiteDatabase.Error) -> Bool {
        guard let oldPack = record.pack, let oldOffset = record.packOffset else { return false }
        let rows = try database.query(
            "UPDATE entries SET pack = ?, pack_offset = ? WHERE name = ? AND pack = ? AND pack_offset = ? RETURNING name",
            [.integer(pack), .integer(Int64(offset)), .text(record.name), .integer(oldPack), .integer(oldOffset)])
        return !rows.isEmpty
    }

    /// Deletes the pack `id` from the table, whatever it still holds (the caller moved or removed its entries).
    func removePack(_ id: Int64) throws(SQLiteDatabase.Error) {
        try database.query("DELETE FROM packs WHERE id = ?", [.integer(id)])
    }
}
