/// The disk cache's index: one row per entry in a SQLite database in WAL mode next to the entries, so lookup, access
/// recording and eviction are indexed queries — never a directory scan — and a crash loses at most the accesses
/// not yet written. Several processes may open the same index: SQLite's file locks serialise their writes.
///
/// Small entries' bytes are kept with the index: appended to its pack files (`pack-<id>` beside it, listed in the
/// `packs` table with their length and the bytes of the entries still in them, which triggers keep up to date), each
/// entry's row saying which pack holds its bytes and where. An index written before the pack files kept such bytes in
/// a table of its own (`blobs`, referenced by the `blob` column); those are still read, and triggers delete one with
/// its row or when the row points elsewhere.
///
/// Not thread-safe: ``DiskCache`` keeps it behind its lock.
final class DiskIndex {
    /// One entry as the index knows it. Times are seconds since 1970.
    struct Record: Equatable, Sendable {
        /// The entry's file name in the cache directory.
        var name: String
        /// The key it was stored under; `nil` for entries found on disk when the index was rebuilt.
        var key: String?
        var size: Int
        /// CRC-32 of the bytes; `nil` when unknown (rebuilt entries).
        var checksum: UInt32?
        var created: Double
        var accessed: Double
        /// When the entry stops being fresh (from the origin's Cache-Control max-age), if ever.
        var expires: Double? = nil
        var etag: String? = nil
        var lastModified: String? = nil
        /// The row of the entry's bytes in the index's `blobs` table (an index written before the pack files).
        var blob: Int64? = nil
        /// Stored by a private cache from a response only private caches may keep (`Cache-Control: private`).
        var isPrivate = false
        /// When the entry leaves the cache by its own expiration (`.infinity`: never), moved by reads as `renewal`
        /// says (see ``ExpiryRule``); `nil` for an entry that follows the cache's maximum age since its last read.
        var eviction: Double? = nil
        /// How a read moves `eviction` (``ExpiryRule/renewal``).
        var renewal: Double? = nil
        /// The pack file holding the entry's bytes, and where in it they start; `nil` when they are elsewhere.
        var pack: Int64? = nil
        var packOffset: Int64? = nil

        /// Whether the bytes are kept with the index (in a pack file, or a blob of an older index) rather than in a
        /// file of the entry's own.
        var isKeptWithIndex: Bool { blob != nil || pack != nil }

        /// Whether `other` is the same stored entry (same write, and its bytes in the same place), whatever its access
        /// time.
        func isSameEntry(as other: Record) -> Bool {
            name == other.name && size == other.size && checksum == other.checksum && created == other.created
                && blob == other.blob && pack == other.pack && packOffset == other.packOffset
        }
    }

    let database: SQLiteDatabase

    /// Whether the index file was created by this open (so the directory's entries must be read into it).
    let isNew: Bool

    /// Whether this connection only reads: nothing it does writes the file.
    let isReadOnly: Bool

    /// Opens an existing index at `path` for reading only, as another process (or nobody) keeps it: `immutable` when
    /// nothing can write its directory. Throws when it cannot be opened, is damaged, or holds no entries table.
    init(readingAt path: String, immutable: Bool) throws(SQLiteDatabase.Error) {
        isNew = false
        isReadOnly = true
        database = try SQLiteDatabase(path: path, mode: immutable ? .immutable : .readOnly)
        let check = try database.query("PRAGMA quick_check")
        guard check.first?.first?.text == "ok" else {
            throw SQLiteDatabase.Error(code: 11, message: "index failed its integrity check")  // SQLITE_CORRUPT
        }
        let columns = try database.query("PRAGMA table_info(entries)").compactMap { $0[1].text }
        guard columns.contains("blob") else {
            // Absent, or written before entries could be kept inside it: upgrading it would be a write.
            throw SQLiteDatabase.Error(code: 1, message: "the index has no entries table of this version")
        }
        // Written before entries recorded whether they are private, or had expirations of their own: read as none
        // is, and has.
        self.columns = Self.columns(present: Set(columns))
    }

    /// Opens a second connection to the index at `path` that another connection of this process keeps (and has
    /// checked), for reads only: in WAL mode its reads never wait for that connection's write transactions.
    init(readerOf path: String) throws(SQLiteDatabase.Error) {
        isNew = false
        isReadOnly = true
        database = try SQLiteDatabase(path: path, mode: .readOnly)
        columns = Self.columns(present: Set(Self.columnNames))
    }

    /// Opens or creates the index at `path`. Throws when the file cannot be opened or is damaged (the error's
    /// `isCorruption`); the caller then deletes it and opens a new one.
    init(path: String) throws(SQLiteDatabase.Error) {
        isNew = !FileSystem.exists(path)
        isReadOnly = false
        columns = Self.columns(present: Set(Self.columnNames))
        database = try SQLiteDatabase(path: path)
        // The index holds rows only (entries' bytes are in packs and files), and every transaction writes each page
        // it touched to the log: SQLite's 4 KiB pages, the default, keep that to what changed. (Indexes that kept
        // small entries' bytes inside them were made with 16 KiB pages, and keep them.)
        try database.execute("PRAGMA journal_mode=WAL")
        // The statement journals of writes that fire triggers in memory, not in a temporary file each.
        try database.execute("PRAGMA temp_store=MEMORY")
        // No fsync at all: a process crash loses nothing (the WAL is in the OS's page cache), and a power loss that
        // leaves the file damaged is caught by the integrity check below and answered by rebuilding from the files.
        // A cache needs no durability, and the checkpoints' fsyncs were most of a large cleaning's time.
        try database.execute("PRAGMA synchronous=OFF")
        let check = try database.query("PRAGMA quick_check")
        guard check.first?.first?.text == "ok" else {
            throw SQLiteDatabase.Error(code: 11, message: "index failed its integrity check")  // SQLITE_CORRUPT
        }
        try database.transaction { () throws(SQLiteDatabase.Error) in
            try database.execute(
                """
                CREATE TABLE IF NOT EXISTS entries(
                    name TEXT PRIMARY KEY, key TEXT, size INTEGER NOT NULL, checksum INTEGER,
                    created REAL NOT NULL, accessed REAL NOT NULL, expires REAL, etag TEXT, last_modified TEXT,
                    blob INTEGER, private INTEGER, eviction REAL, renewal REAL, extended BLOB
                ) WITHOUT ROWID;
                """)
            // An index written before entries could be kept inside it, recorded whether they are private, or had
            // expirations and extended data of their own, lacks the column: add it.
            let columns = try database.query("PRAGMA table_info(entries)").compactMap { $0[1].text }
            for (column, type) in [
                ("blob", "INTEGER"), ("private", "INTEGER"), ("eviction", "REAL"), ("renewal", "REAL"),
                ("extended", "BLOB"), ("pack", "INTEGER"), ("pack_offset", "INTEGER"),
            ] where !columns.contains(column) {
                try database.execute("ALTER TABLE entries ADD COLUMN \(column) \(type)")
            }
            try database.execute(
                """
                CREATE INDEX IF NOT EXISTS entries_by_access ON entries(accessed);
                CREATE INDEX IF NOT EXISTS entries_by_eviction ON entries(eviction) WHERE eviction IS NOT NULL;
                CREATE TABLE IF NOT EXISTS totals(
                    id INTEGER PRIMARY KEY CHECK (id = 0), size INTEGER NOT NULL, count INTEGER NOT NULL);
                INSERT OR IGNORE INTO totals VALUES (0, 0, 0);
                CREATE TRIGGER IF NOT EXISTS entries_inserted AFTER INSERT ON entries
                    BEGIN UPDATE totals SET size = size + NEW.size, count = count + 1; END;
                CREATE TRIGGER IF NOT EXISTS entries_deleted AFTER DELETE ON entries
                    BEGIN UPDATE totals SET size = size - OLD.size, count = count - 1; END;
                CREATE TRIGGER IF NOT EXISTS entries_resized AFTER UPDATE OF size ON entries
                    BEGIN UPDATE totals SET size = size - OLD.size + NEW.size; END;
                CREATE TABLE IF NOT EXISTS blobs(id INTEGER PRIMARY KEY, data BLOB NOT NULL);
                CREATE TRIGGER IF NOT EXISTS entries_deleted_blob AFTER DELETE ON entries WHEN OLD.blob IS NOT NULL
                    BEGIN DELETE FROM blobs WHERE id = OLD.blob; END;
                CREATE TRIGGER IF NOT EXISTS entries_moved_blob AFTER UPDATE OF blob ON entries
                    WHEN OLD.blob IS NOT NULL AND OLD.blob IS NOT NEW.blob
                    BEGIN DELETE FROM blobs WHERE id = OLD.blob; END;
                CREATE TABLE IF NOT EXISTS packs(
                    id INTEGER PRIMARY KEY AUTOINCREMENT, length INTEGER NOT NULL, live INTEGER NOT NULL);
                CREATE TRIGGER IF NOT EXISTS entries_packed AFTER INSERT ON entries WHEN NEW.pack IS NOT NULL
                    BEGIN UPDATE packs SET live = live + NEW.size WHERE id = NEW.pack; END;
                CREATE TRIGGER IF NOT EXISTS entries_unpacked AFTER DELETE ON entries WHEN OLD.pack IS NOT NULL
                    BEGIN UPDATE packs SET live = live - OLD.size WHERE id = OLD.pack; END;
                CREATE TRIGGER IF NOT EXISTS entries_repacked AFTER UPDATE OF pack, size ON entries
                    WHEN OLD.pack IS NOT NULL OR NEW.pack IS NOT NULL
                    BEGIN
                        UPDATE packs SET live = live - OLD.size WHERE id = OLD.pack;
                        UPDATE packs SET live = live + NEW.size WHERE id = NEW.pack;
                    END;
                """)
        }
    }

    // MARK: Reading

    private static let columnNames = [
        "name", "key", "size", "checksum", "created", "accessed", "expires", "etag", "last_modified", "blob",
        "private", "eviction", "renewal", "pack", "pack_offset",
    ]
    /// The columns a record is written to: its own, and the entry's extended data (read on its own, not with it).
    private static let writtenColumns = (columnNames + ["extended"]).joined(separator: ", ")
    private static let placeholders = (columnNames + ["extended"]).map { _ in "?" }.joined(separator: ", ")

    /// The columns a record is read from (`NULL` for a column an older index lacks). None is ambiguous in the join
    /// with `blobs`, whose columns are `id` and `data`.
    private static func columns(present: Set<String>) -> String {
        columnNames.map { present.contains($0) ? $0 : "NULL" }.joined(separator: ", ")
    }

    /// What a record is read from, in the order of `columnNames`.
    let columns: String

    /// The record for the entry `name`.
    func record(named name: String) throws(SQLiteDatabase.Error) -> Record? {
        try database.query("SELECT \(columns) FROM entries WHERE name = ?", [.text(name)]).first.map(Self.record)
    }

    /// The record for the entry `name` and, when the index holds its bytes as a blob, those bytes (`nil` for an
    /// entry in a file or a pack, or for a blob that is missing, which only a damaged index can do): one query.
    func recordAndBytes(named name: String) throws(SQLiteDatabase.Error) -> (record: Record, bytes: [UInt8]?)? {
        let query =
            "SELECT \(columns), blobs.data FROM entries LEFT JOIN blobs ON blobs.id = entries.blob "
            + "WHERE entries.name = ?"
        guard let row = try database.query(query, [.text(name)]).first else { return nil }
        return (Self.record(row), row[Self.columnNames.count].blob)
    }

    /// How many names one ``records(named:)`` query asks for: a fixed count, so one prepared statement serves every
    /// chunk (a short last chunk repeats a name).
    static let namesPerQuery = 128

    /// The records of the entries among `names` that exist, in chunks of ``namesPerQuery`` names a query.
    func records(named names: [String]) throws(SQLiteDatabase.Error) -> [Record] {
        guard let first = names.first else { return [] }
        let sql =
            "SELECT \(columns) FROM entries WHERE name IN ("
            + Array(repeating: "?", count: Self.namesPerQuery).joined(separator: ", ") + ")"
        var records: [Record] = []
        var start = names.startIndex
        while start < names.endIndex {
            let end = min(start + Self.namesPerQuery, names.endIndex)
            var chunk = names[start..<end].map { SQLiteDatabase.Value.text($0) }
            chunk += Array(repeating: .text(first), count: Self.namesPerQuery - chunk.count)
            records += try database.query(sql, chunk).map(Self.record)
            start = end
        }
        return records
    }

    /// The total size and the number of entries: one row kept up to date by triggers.
    func totals() throws(SQLiteDatabase.Error) -> (size: Int, count: Int) {
        let row = try database.query("SELECT size, count FROM totals WHERE id = 0").first
        return (Int(row?[0].integer ?? 0), Int(row?[1].integer ?? 0))
    }

    /// Every record, least recently used first.
    func allRecords() throws(SQLiteDatabase.Error) -> [Record] {
        try database.query("SELECT \(columns) FROM entries ORDER BY accessed").map(Self.record)
    }

    // MARK: Writing

    /// Runs `body` in one write transaction, which also excludes other processes' writers.
    func transaction<Result>(_ body: () throws(SQLiteDatabase.Error) -> Result) throws(SQLiteDatabase.Error) -> Result {
        try database.transaction(body)
    }

    /// Inserts `record` with its `extendedData`, or replaces the record of the same name (whose blob, if it had one,
    /// is deleted).
    func upsert(_ record: Record, extendedData: [UInt8]?) throws(SQLiteDatabase.Error) {
        try database.query(
            """
            INSERT INTO entries(\(Self.writtenColumns)) VALUES (\(Self.placeholders))
            ON CONFLICT(name) DO UPDATE SET key = excluded.key, size = excluded.size, checksum = excluded.checksum,
                created = excluded.created, accessed = excluded.accessed, expires = excluded.expires,
                etag = excluded.etag, last_modified = excluded.last_modified, blob = excluded.blob,
                private = excluded.private, eviction = excluded.eviction, renewal = excluded.renewal,
                pack = excluded.pack, pack_offset = excluded.pack_offset, extended = excluded.extended
            """,
            Self.values(record, extendedData: extendedData))
    }

    /// The extended data stored with the entry `name`: `.some(nil)` when it has none, `nil` when there is no entry.
    func extendedData(named name: String) throws(SQLiteDatabase.Error) -> [UInt8]?? {
        guard let row = try database.query("SELECT extended FROM entries WHERE name = ?", [.text(name)]).first else {
            return nil
        }
        return .some(row[0].blob)
    }

    /// Replaces the extended data of the entry `name`; returns whether there was one.
    func setExtendedData(_ data: [UInt8]?, named name: String) throws(SQLiteDatabase.Error) -> Bool {
        let rows = try database.query(
            "UPDATE entries SET extended = ? WHERE name = ? RETURNING name",
            [data.map { .blob($0) } ?? .null, .text(name)])
        return !rows.isEmpty
    }

    /// Adds `bytes` to the blobs table and returns their row, as an index written before the pack files did (for
    /// tests of such an index).
    func insertBlob(_ bytes: [UInt8]) throws(SQLiteDatabase.Error) -> Int64 {
        let rows = try database.query("INSERT INTO blobs(data) VALUES (?) RETURNING id", [.blob(bytes)])
        guard let id = rows.first?.first?.integer else {
            throw SQLiteDatabase.Error(code: 1, message: "no row id for the inserted blob")  // SQLITE_ERROR
        }
        return id
    }

    /// How many blobs the index holds.
    func blobCount() throws(SQLiteDatabase.Error) -> Int {
        Int(try database.query("SELECT count(*) FROM blobs").first?.first?.integer ?? 0)
    }

    /// A record's columns, in the order of `writtenColumns`.
    private static func values(_ record: Record, extendedData: [UInt8]?) -> [SQLiteDatabase.Value] {
        [
            .text(record.name), record.key.map { .text($0) } ?? .null, .integer(Int64(record.size)),
            record.checksum.map { .integer(Int64($0)) } ?? .null, .real(record.created), .real(record.accessed),
            record.expires.map { .real($0) } ?? .null, record.etag.map { .text($0) } ?? .null,
            record.lastModified.map { .text($0) } ?? .null, record.blob.map { .integer($0) } ?? .null,
            .integer(record.isPrivate ? 1 : 0), record.eviction.map { .real($0) } ?? .null,
            record.renewal.map { .real($0) } ?? .null, record.pack.map { .integer($0) } ?? .null,
            record.packOffset.map { .integer($0) } ?? .null, extendedData.map { .blob($0) } ?? .null,
        ]
    }

    /// Inserts `record` unless a record of the same name exists.
    func insertIfAbsent(_ record: Record) throws(SQLiteDatabase.Error) {
        try database.query(
            "INSERT OR IGNORE INTO entries(\(Self.writtenColumns)) VALUES (\(Self.placeholders))",
            Self.values(record, extendedData: nil))
    }

    /// Records when entries were last read (a batch collected since the last call), moving the expiry of those with
    /// their own as their rule says (``ExpiryRule/expiry(afterReadAt:)``).
    func recordAccesses(_ accesses: [String: Double]) throws(SQLiteDatabase.Error) {
        for (name, time) in accesses {
            try database.query(
                """
                UPDATE entries SET accessed = max(accessed, ?1), eviction = CASE
                    WHEN eviction IS NULL OR renewal IS NULL OR ?1 <= created THEN eviction
                    WHEN renewal < 0 THEN max(eviction, -renewal)
                    ELSE max(eviction, ?1 + renewal) END
                WHERE name = ?2
                """,
                [.real(time), .text(name)])
        }
    }

    /// Deletes the records named, returning those that existed (another process may have deleted some first).
    func remove(named names: [String]) throws(SQLiteDatabase.Error) -> [Record] {
        var removed: [Record] = []
        for name in names {
            let rows = try database.query(
                "DELETE FROM entries WHERE name = ? RETURNING \(columns)", [.text(name)])
            removed += rows.map(Self.record)
        }
        return removed
    }

    /// Deletes the `count` least recently used records — among those last read before `accessedBefore`, when
    /// given — in one statement, and returns them, least recently used first.
    func removeLeastRecentlyUsed(count: Int, accessedBefore: Double? = nil) throws(SQLiteDatabase.Error) -> [Record] {
        try deleteLeastRecentlyUsed(count: count, accessedBefore: accessedBefore).sorted { $0.accessed < $1.accessed }
    }

    /// With `accessedBefore`, only entries that follow the maximum age (none of their own expiry) are removed.
    private func deleteLeastRecentlyUsed(count: Int, accessedBefore: Double?) throws(SQLiteDatabase.Error) -> [Record] {
        if let accessedBefore {
            return try database.query(
                """
                DELETE FROM entries WHERE name IN
                    (SELECT name FROM entries WHERE accessed < ? AND eviction IS NULL ORDER BY accessed LIMIT ?)
                RETURNING \(columns)
                """,
                [.real(accessedBefore), .integer(Int64(count))]
            ).map(Self.record)
        }
        return try database.query(
            """
            DELETE FROM entries WHERE name IN (SELECT name FROM entries ORDER BY accessed LIMIT ?)
            RETURNING \(columns)
            """,
            [.integer(Int64(count))]
        ).map(Self.record)
    }

    /// Deletes up to `count` records whose own expiry is at or before `time`, and returns them.
    func removeExpired(count: Int, at time: Double) throws(SQLiteDatabase.Error) -> [Record] {
        try database.query(
            """
            DELETE FROM entries WHERE name IN (SELECT name FROM entries WHERE eviction <= ? LIMIT ?)
            RETURNING \(columns)
            """,
            [.real(time), .integer(Int64(count))]
        ).map(Self.record)
    }

    /// The `limit` least recently used records.
    func leastRecentlyUsed(limit: Int) throws(SQLiteDatabase.Error) -> [Record] {
        try database.query(
            "SELECT \(columns) FROM entries ORDER BY accessed LIMIT ?", [.integer(Int64(limit))]
        ).map(Self.record)
    }

    /// Deletes every record.
    func removeAll() throws(SQLiteDatabase.Error) -> [Record] {
        try database.query("DELETE FROM entries RETURNING \(columns)").map(Self.record)
    }

    static func record(_ row: [SQLiteDatabase.Value]) -> Record {
        Record(
            name: row[0].text ?? "", key: row[1].text, size: Int(row[2].integer ?? 0),
            checksum: row[3].integer.map { UInt32(truncatingIfNeeded: $0) }, created: row[4].real ?? 0,
            accessed: row[5].real ?? 0, expires: row[6].real, etag: row[7].text, lastModified: row[8].text,
            blob: row[9].integer, isPrivate: row[10].integer == 1, eviction: row[11].real, renewal: row[12].real,
            pack: row[13].integer, packOffset: row[14].integer)
    }
}
