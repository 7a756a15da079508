import Converge

/// Every record a store file holds (an entry, a state row, a metadata row) is its value
/// followed by a CRC-32C of its name and value (schema 3): a page damaged on disk is refused
/// as corrupt instead of being read as another value or another key. SQLite's own page
/// checks catch only damage to its structure, not to the bytes of a value. The one
/// exception is the file's identity (the state row "store-id"), which is never read as
/// data, only compared with the one a -wal beside the file carries, and stays as it was
/// written so that a migrated file and its -wal still agree.
enum SQLiteRecord {
    /// `value` followed by the checksum of `name` and `value`, as stored.
    static func sealed(_ value: [UInt8], name: String) -> [UInt8] {
        CRC32C.sealed(value, context: context(of: name))
    }

    /// The value of a stored record, or `nil` if the record is damaged (too short, or its
    /// checksum does not match its name and value).
    static func unsealed(_ stored: [UInt8], name: String) -> [UInt8]? {
        try? CRC32C.unsealed(stored, context: context(of: name), what: name)
    }

    /// What the checksum covers besides the value: the name, then a NUL.
    private static func context(of name: String) -> [UInt8] { Array(name.utf8) + [0] }

    /// Seals every record of a file written before schema 3, inside the caller's migration
    /// transaction.
    static func sealEveryRecord(in db: SQLiteConnection) throws(ConvergeError) {
        for (table, nameColumn, valueColumn) in [("entries", "key", "siblings"), ("state", "name", "value"), ("metadata", "name", "value")] {
            let rows = try db.execute("SELECT \(nameColumn), \(valueColumn) FROM \(table)", doing: .read)
            for row in rows {
                guard let name = row[0].text, let value = row[1].blob, !(table == "state" && name == "store-id") else { continue }
                try db.execute("UPDATE \(table) SET \(valueColumn) = ? WHERE \(nameColumn) = ?",
                               [.blob(sealed(value, name: name)), .text(name)])
            }
        }
    }
}
