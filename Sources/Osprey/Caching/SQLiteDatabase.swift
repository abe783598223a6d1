internal import COspreyLibraryLoader

/// A SQLite connection: just what the disk cache's index needs (statements with bound values, rows, transactions),
/// with SQLite's message kept in every error.
///
/// Not thread-safe: its owner serialises access (``DiskIndex`` keeps it behind a lock). It owns a C pointer, which
/// is closed in `deinit`.
final class SQLiteDatabase {
    /// A failed SQLite call: the result code and SQLite's message.
    struct Error: Swift.Error, CustomStringConvertible {
        var code: Int32
        var message: String

        var description: String { "SQLite error \(code): \(message)" }

        /// The database file is damaged or is not a database.
        var isCorruption: Bool { code == SQLITE_CORRUPT || code == SQLITE_NOTADB }

        /// Another connection holds a lock this one could not wait for: opening a database that another process is
        /// creating, or switching it to WAL, can answer this at once without calling the busy handler.
        var isBusy: Bool { code & 0xff == SQLITE_BUSY || code & 0xff == SQLITE_LOCKED }

        /// The disk holding the database is full.
        var isDiskFull: Bool { code & 0xff == SQLITE_FULL }
    }

    /// A value to bind or a column read back.
    enum Value: Equatable {
        case integer(Int64)
        case real(Double)
        case text(String)
        case blob([UInt8])
        case null
    }

    private let handle: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]
    /// libsqlite3's functions, opened with the first database of the process.
    private let sqlite: osprey_sqlite_functions

    /// How a database is opened.
    enum Mode {
        /// Read and write, creating the file when it is missing.
        case readWrite
        /// Read only; another process may be writing it (WAL mode needs its `-shm` file then, or must create one).
        case readOnly
        /// Read only, with SQLite told nothing changes the file while it is open (`immutable=1`): no locks, no `-shm`
        /// file. For a database in a directory nobody can write (a read-only mount, `chattr +i`).
        case immutable
    }

    /// Opens the database at `path`; other processes may have it open at the same time.
    init(path: String, mode: Mode = .readWrite, busyTimeout: Duration = .seconds(10)) throws(Error) {
        var reason: UnsafePointer<CChar>?
        guard let sqlite = osprey_sqlite_functions_load(&reason)?.pointee else {
            throw Error(
                code: SQLITE_CANTOPEN,
                message: "cannot load libsqlite3: " + (reason.map { String(cString: $0) } ?? "unknown"))
        }
        self.sqlite = sqlite
        var handle: OpaquePointer?
        let status: Int32
        switch mode {
        case .readWrite:
            status = sqlite.sqlite3_open_v2(
                path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        case .readOnly:
            status = sqlite.sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        case .immutable:
            status = sqlite.sqlite3_open_v2(
                Self.uri(path) + "?immutable=1", &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                nil)
        }
        guard status == SQLITE_OK, let handle else {
            let message =
                handle.flatMap { sqlite.sqlite3_errmsg($0) }.map { String(cString: $0) } ?? "cannot open \(path)"
            _ = sqlite.sqlite3_close(handle)
            throw Error(code: status, message: message)
        }
        self.handle = handle
        let milliseconds =
            busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000
        _ = sqlite.sqlite3_busy_timeout(handle, Int32(clamping: milliseconds))
    }

    /// `path` as a `file:` URI: the characters a URI gives a meaning to are escaped.
    private static func uri(_ path: String) -> String {
        var escaped = "file:"
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), 0..<0x21, 0x7F...:
                escaped += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            default:
                escaped.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return escaped
    }

    deinit {
        for statement in statements.values {
            _ = sqlite.sqlite3_finalize(statement)
        }
        _ = sqlite.sqlite3_close(handle)
    }

    /// Runs `sql`, which may hold several statements and binds nothing.
    func execute(_ sql: String) throws(Error) {
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite.sqlite3_exec(handle, sql, nil, nil, &message)
        if status != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? lastMessage
            sqlite.sqlite3_free(message)
            throw Error(code: status, message: text)
        }
    }

    /// Runs one statement with `values` bound to its `?` parameters and returns every row.
    @discardableResult
    func query(_ sql: String, _ values: [Value] = []) throws(Error) -> [[Value]] {
        let statement = try prepared(sql)
        defer {
            _ = sqlite.sqlite3_reset(statement)
            _ = sqlite.sqlite3_clear_bindings(statement)
        }
        for (index, value) in values.enumerated() {
            let position = Int32(index + 1)
            let status: Int32
            switch value {
            case .integer(let integer): status = sqlite.sqlite3_bind_int64(statement, position, integer)
            case .real(let real): status = sqlite.sqlite3_bind_double(statement, position, real)
            case .null: status = sqlite.sqlite3_bind_null(statement, position)
            case .text(let text):
                // SQLITE_TRANSIENT (a macro C cannot export to Swift): SQLite copies the text before returning.
                status = sqlite.sqlite3_bind_text(
                    statement, position, text, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
            case .blob(let bytes) where bytes.isEmpty:
                // A null pointer would bind NULL, not an empty blob.
                status = sqlite.sqlite3_bind_zeroblob(statement, position, 0)
            case .blob(let bytes):
                status = bytes.withUnsafeBytes { buffer in
                    sqlite.sqlite3_bind_blob64(
                        statement, position, buffer.baseAddress, sqlite3_uint64(buffer.count),
                        unsafeBitCast(-1, to: sqlite3_destructor_type.self))
                }
            }
            guard status == SQLITE_OK else { throw error(status) }
        }
        var rows: [[Value]] = []
        while true {
            let status = sqlite.sqlite3_step(statement)
            if status == SQLITE_DONE { return rows }
            guard status == SQLITE_ROW else { throw error(status) }
            rows.append((0..<sqlite.sqlite3_column_count(statement)).map { column(statement, $0) })
        }
    }

    /// Runs `body` in one write transaction (BEGIN IMMEDIATE: the write lock is taken at once, so two processes
    /// never both read and then fail to upgrade); rolls back if it throws.
    func transaction<Result>(_ body: () throws(Error) -> Result) throws(Error) -> Result {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    // MARK: Internals

    private func prepared(_ sql: String) throws(Error) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        let status = sqlite.sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else { throw error(status) }
        statements[sql] = statement
        return statement
    }

    private func column(_ statement: OpaquePointer, _ index: Int32) -> Value {
        switch sqlite.sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER: .integer(sqlite.sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: .real(sqlite.sqlite3_column_double(statement, index))
        case SQLITE_TEXT: .text(sqlite.sqlite3_column_text(statement, index).map { String(cString: $0) } ?? "")
        case SQLITE_BLOB:
            // Both calls in this order, as SQLite asks: the pointer first, then its length. An empty blob's pointer
            // is null.
            if let pointer = sqlite.sqlite3_column_blob(statement, index) {
                .blob(
                    Array(
                        UnsafeRawBufferPointer(
                            start: pointer, count: Int(sqlite.sqlite3_column_bytes(statement, index)))))
            } else {
                .blob([])
            }
        default: .null
        }
    }

    private func error(_ status: Int32) -> Error {
        Error(code: status, message: lastMessage)
    }

    /// SQLite's message for the connection's last failure.
    private var lastMessage: String {
        sqlite.sqlite3_errmsg(handle).map { String(cString: $0) } ?? "no message"
    }
}

extension SQLiteDatabase.Value {
    var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    var text: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    var blob: [UInt8]? {
        if case .blob(let value) = self { return value }
        return nil
    }

    var real: Double? {
        switch self {
        case .real(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }
}
