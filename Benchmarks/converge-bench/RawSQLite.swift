import CSQLite
import Foundation

/// A connection through SQLite's C API with nothing in between: the baseline `sqlite.batch`
/// holds Converge's durable writes to. Statements are prepared once and bytes are bound
/// without copying, as a careful hand-written program would. Any failure stops the
/// benchmark: a baseline that silently wrote nothing would flatter nobody but mislead.
final class RawSQLite {
    let path: String
    private var db: OpaquePointer?

    init(path: String, readOnly: Bool = false) {
        self.path = path
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let code = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
        precondition(code == SQLITE_OK, "cannot open \(path): SQLite error \(code)")
    }

    deinit { sqlite3_close(db) }

    func check(_ code: Int32, _ what: @autoclosure () -> String) {
        precondition(code == SQLITE_OK || code == SQLITE_DONE || code == SQLITE_ROW,
                     "\(what()) failed on \(path): \(String(cString: sqlite3_errmsg(db))) (SQLite error \(code))")
    }

    func execute(_ sql: String) {
        check(sqlite3_exec(db, sql, nil, nil, nil), sql)
    }

    /// A prepared statement; the caller finalizes it.
    func prepare(_ sql: String) -> OpaquePointer {
        var statement: OpaquePointer?
        check(sqlite3_prepare_v2(db, sql, -1, &statement, nil), sql)
        return statement!
    }

    /// Every row of `sql`, each column as text or bytes (`nil` for other types).
    func rows(_ sql: String) -> [[[UInt8]?]] {
        let statement = prepare(sql)
        defer { sqlite3_finalize(statement) }
        var rows: [[[UInt8]?]] = []
        while true {
            let step = sqlite3_step(statement)
            if step == SQLITE_DONE { break }
            check(step, sql)
            rows.append((0..<sqlite3_column_count(statement)).map { column in
                switch sqlite3_column_type(statement, column) {
                case SQLITE_TEXT, SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return [] }
                    return Array(UnsafeRawBufferPointer(start: bytes, count: count))
                default: return nil
                }
            })
        }
        return rows
    }

    /// Binds `text` and `blob` to a two-parameter statement (without copying either), runs
    /// it and resets it.
    func run(_ statement: OpaquePointer, text: [UInt8], blob: [UInt8]) {
        text.withUnsafeBytes { key in
            blob.withUnsafeBytes { value in
                check(sqlite3_bind_text(statement, 1, key.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(key.count), nil), "binding a key")
                check(sqlite3_bind_blob(statement, 2, value.baseAddress!, Int32(value.count), nil), "binding a value")
                check(sqlite3_step(statement), "a write")
            }
        }
        check(sqlite3_reset(statement), "resetting a statement")
    }
}
