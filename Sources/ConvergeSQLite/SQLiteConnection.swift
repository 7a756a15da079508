import CSQLite
import Converge

/// A thin wrapper over one SQLite connection: statements with bound parameters, and
/// every failure turned into a ``ConvergeError/storage(_:)`` with its kind and the file.
/// `package`, so the hub's SQLite state store uses the same wrapper.
package final class SQLiteConnection {
    package let path: String
    fileprivate var handle: OpaquePointer?
    /// Statements prepared once and reused by ``cached(_:doing:)``: a store runs the same
    /// few statements in every write, and preparing one costs about as much as running it.
    private var statementCache: [String: Statement] = [:]

    /// SQLite's own destructor value telling it to copy bound bytes.
    fileprivate static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// - Parameter ignoringJournal: Opens the main file alone, read-only, as it is on disk
    ///   (SQLite's `immutable=1`): without the `-wal` beside it.
    package init(path: String, readOnly: Bool = false, ignoringJournal: Bool = false) throws(ConvergeError) {
        self.path = path
        var flags = readOnly || ignoringJournal ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        var name = path
        if ignoringJournal {
            flags |= SQLITE_OPEN_URI
            let escaped = path.addingPercentEncodingForURI()
            name = "file:" + escaped + "?immutable=1"
        }
        var db: OpaquePointer?
        let code = sqlite3_open_v2(name, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
        handle = db
        guard code == SQLITE_OK else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(db)
            handle = nil
            throw Self.error(code: code, message: message, path: path, doing: .open)
        }
        sqlite3_busy_timeout(db, 5_000)
    }

    deinit {
        statementCache.removeAll()  // finalized before the connection closes
        sqlite3_close(handle)
    }

    /// The statement for `sql`, prepared on first use and kept for the connection's
    /// lifetime. Only for a fixed set of statements (no values spliced into `sql`).
    package func cached(_ sql: String, doing action: StorageFailure.Operation = .write) throws(ConvergeError) -> Statement {
        if let statement = statementCache[sql] { return statement }
        let statement = try prepare(sql, doing: action)
        statementCache[sql] = statement
        return statement
    }

    /// Whether closing the connection checkpoints the WAL into the main file (SQLite's
    /// default). Off while a store checks that the WAL belongs to its main file, so that a
    /// foreign or stale `-wal` is never written into it.
    package func setCheckpointOnClose(_ enabled: Bool) {
        _ = converge_sqlite3_checkpoint_on_close(handle, enabled ? 1 : 0)
    }

    /// The failure SQLite's result `code` describes (its primary code decides the kind, as
    /// GRDB's `ResultCode` does), naming the file and what was being done.
    static func error(code: Int32, message: String, path: String, doing operation: StorageFailure.Operation) -> ConvergeError {
        .storage(StorageFailure(kind: kind(ofResultCode: code), path: path, operation: operation,
                                detail: detail(ofResultCode: code, message: message)))
    }

    /// The kind of failure of an SQLite result code (primary or extended).
    static func kind(ofResultCode code: Int32) -> StorageFailure.Kind {
        switch code & 0xFF {
        case SQLITE_FULL: return .diskFull
        case SQLITE_READONLY: return .readOnly
        case SQLITE_CANTOPEN: return .cannotOpen
        case SQLITE_PERM, SQLITE_AUTH: return .permissionDenied
        case SQLITE_NOTADB: return .notADatabase
        case SQLITE_CORRUPT: return .corrupt
        case SQLITE_IOERR: return .ioError
        case SQLITE_BUSY, SQLITE_LOCKED: return .locked
        default: return .other
        }
    }

    /// What of SQLite's message adds to the kind: nothing for the kinds that say it all.
    private static func detail(ofResultCode code: Int32, message: String) -> String? {
        switch kind(ofResultCode: code) {
        case .diskFull, .readOnly, .cannotOpen, .permissionDenied, .notADatabase, .locked: return nil
        case .corrupt, .ioError: return message
        default: return "\(message) (SQLite error \(code))"
        }
    }

    func fail(_ code: Int32, doing operation: StorageFailure.Operation) -> ConvergeError {
        Self.error(code: code, message: String(cString: sqlite3_errmsg(handle)), path: path, doing: operation)
    }

    /// A value to bind or read.
    package enum Column {
        case integer(Int64)
        case text(String)
        case blob([UInt8])
        case null
    }

    /// A prepared statement, reusable with new parameters (preparing once per batch is
    /// much cheaper than once per row).
    package final class Statement {
        /// Unowned: the connection caches statements, and a statement never outlives it.
        unowned let connection: SQLiteConnection
        let action: StorageFailure.Operation
        fileprivate var handle: OpaquePointer?

        fileprivate init(connection: SQLiteConnection, sql: String, action: StorageFailure.Operation) throws(ConvergeError) {
            self.connection = connection
            self.action = action
            let prepared = sqlite3_prepare_v2(connection.handle, sql, -1, &handle, nil)
            guard prepared == SQLITE_OK else { throw connection.fail(prepared, doing: action) }
        }

        deinit { sqlite3_finalize(handle) }

        /// Runs the statement with `parameters`, returning every row.
        @discardableResult
        package func run(_ parameters: [Column] = []) throws(ConvergeError) -> [[Column]] {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
            for (index, parameter) in parameters.enumerated() {
                let position = Int32(index + 1)
                let code: Int32
                switch parameter {
                case .integer(let value): code = sqlite3_bind_int64(handle, position, value)
                case .text(let value): code = sqlite3_bind_text(handle, position, value, -1, SQLiteConnection.transient)
                case .blob(let bytes):
                    code = bytes.withUnsafeBytes { buffer in
                        sqlite3_bind_blob(handle, position, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count),
                                          SQLiteConnection.transient)
                    }
                case .null: code = sqlite3_bind_null(handle, position)
                }
                guard code == SQLITE_OK else { throw connection.fail(code, doing: action) }
            }
            // Reset when done (or failed): a cached statement must not keep a read open.
            defer { sqlite3_reset(handle) }
            var rows: [[Column]] = []
            while true {
                let step = sqlite3_step(handle)
                if step == SQLITE_DONE { break }
                guard step == SQLITE_ROW else { throw connection.fail(step, doing: action) }
                var row: [Column] = []
                for column in 0..<sqlite3_column_count(handle) {
                    switch sqlite3_column_type(handle, column) {
                    case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(handle, column)))
                    case SQLITE_TEXT: row.append(.text(String(cString: sqlite3_column_text(handle, column))))
                    case SQLITE_BLOB:
                        let count = Int(sqlite3_column_bytes(handle, column))
                        if count == 0 { row.append(.blob([])); continue }
                        let pointer = sqlite3_column_blob(handle, column)!
                        row.append(.blob(Array(UnsafeRawBufferPointer(start: pointer, count: count))))
                    default: row.append(.null)
                    }
                }
                rows.append(row)
            }
            return rows
        }
    }

    package func prepare(_ sql: String, doing action: StorageFailure.Operation = .write) throws(ConvergeError) -> Statement {
        try Statement(connection: self, sql: sql, action: action)
    }

    /// Runs `sql` with `parameters`, returning every row.
    @discardableResult
    package func execute(_ sql: String, _ parameters: [Column] = [], doing action: StorageFailure.Operation = .write) throws(ConvergeError) -> [[Column]] {
        try prepare(sql, doing: action).run(parameters)
    }

    /// Runs `body` in one transaction: committed if it returns, rolled back if it throws.
    ///
    /// - Parameter writing: Whether `body` writes: the transaction then takes the file's
    ///   write lock at once (`BEGIN IMMEDIATE`), so what `body` reads is the latest state and
    ///   no other connection commits until it ends. A reading transaction (`BEGIN`) sees
    ///   one consistent snapshot and never blocks writers.
    package func transaction<T>(writing: Bool = true, _ body: () throws(ConvergeError) -> T) throws(ConvergeError) -> T {
        try cached(writing ? "BEGIN IMMEDIATE" : "BEGIN", doing: writing ? .write : .read).run()
        do {
            let result = try body()
            try cached("COMMIT").run()
            return result
        } catch {
            _ = try? cached("ROLLBACK").run()
            throw error
        }
    }
}

extension SQLiteConnection.Column {
    package var integer: Int64? { if case .integer(let v) = self { return v }; return nil }
    package var text: String? { if case .text(let v) = self { return v }; return nil }
    package var blob: [UInt8]? { if case .blob(let v) = self { return v }; return nil }
}

extension String {
    /// The path as the path of a `file:` URI: `%`, `?` and `#` escaped, as SQLite reads it.
    fileprivate func addingPercentEncodingForURI() -> String {
        var result = ""
        for character in unicodeScalars {
            switch character {
            case "%": result += "%25"
            case "?": result += "%3f"
            case "#": result += "%23"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }
}
