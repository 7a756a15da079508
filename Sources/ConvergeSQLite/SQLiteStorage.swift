import CSQLite
import Converge
import Foundation
import Synchronization

/// A durable ``Storage`` on the system SQLite library: a WAL journal, one transaction per
/// save (so a write the store reports as done survives `kill -9` and power loss), a schema
/// version with migrations from the first version on, and an integrity check at open.
///
/// A file that is not a Converge store (another program's database, a truncated or
/// corrupt file) is refused at open with an error naming the path; it is never
/// overwritten or reset.
public final class SQLiteStorage: Storage {
    /// The file's path.
    public let path: String
    private let connection: Mutex<SQLiteConnection>

    /// Marks a database as a Converge store (`PRAGMA application_id`): "Cvg1".
    static let applicationID: Int64 = 0x4376_6731
    /// The schema version this build writes; older files are migrated at open.
    public static let schemaVersion: Int64 = 1

    /// Migrations: the statements that take a file from version `index` to `index + 1`.
    static let migrations: [[String]] = [
        [
            "CREATE TABLE entries (key TEXT PRIMARY KEY NOT NULL, siblings BLOB NOT NULL) WITHOUT ROWID",
            "CREATE TABLE state (name TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL) WITHOUT ROWID",
            "CREATE TABLE metadata (name TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL) WITHOUT ROWID",
        ],
    ]

    /// Opens (or creates) the store file at `path`.
    ///
    /// - Throws: ``ConvergeError/storage(_:)`` naming `path`, with the kind of failure:
    ///   `.cannotOpen`, `.permissionDenied` or `.readOnly` if the file cannot be opened or
    ///   created; `.notADatabase` or `.foreignStore` if it is not a Converge store;
    ///   `.corrupt` if it is damaged or truncated; `.newerSchema` if a newer version of
    ///   Converge wrote it; `.locked` if another process holds it. Nothing is changed then.
    public init(path: String) throws(ConvergeError) {
        self.path = path
        try Self.checkHeader(path)
        let connection = try SQLiteConnection(path: path)
        // Identify before changing anything: a foreign database must stay untouched.
        let applicationID = try connection.execute("PRAGMA application_id", doing: .read).first?.first?.integer ?? 0
        let objects = try connection.execute("SELECT count(*) FROM sqlite_master", doing: .read).first?.first?.integer ?? 0
        if applicationID != Self.applicationID && (applicationID != 0 || objects != 0) {
            throw .storage(.foreignStore, path: path, operation: .open)
        }
        let check = try connection.execute("PRAGMA quick_check", doing: .check).first?.first?.text ?? "?"
        guard check == "ok" else { throw .storage(.corrupt, path: path, operation: .open, detail: check) }
        let version = try connection.execute("PRAGMA user_version", doing: .read).first?.first?.integer ?? 0
        guard version <= Self.schemaVersion else {
            throw .storage(.newerSchema, path: path, operation: .open,
                           detail: "schema \(version), this one reads up to \(Self.schemaVersion)")
        }
        let mode = try connection.execute("PRAGMA journal_mode=WAL", doing: .open).first?.first?.text ?? ""
        guard mode.lowercased() == "wal" else {
            throw .storage(.unsupported, path: path, operation: .open, detail: "the WAL journal could not be enabled: \(mode)")
        }
        try connection.execute("PRAGMA synchronous=FULL")
        if version < Self.schemaVersion {
            try connection.transaction { () throws(ConvergeError) in
                for step in Int(version)..<Int(Self.schemaVersion) {
                    for statement in Self.migrations[step] { try connection.execute(statement) }
                }
                try connection.execute("PRAGMA application_id=\(Self.applicationID)")
                try connection.execute("PRAGMA user_version=\(Self.schemaVersion)")
            }
        }
        self.connection = Mutex(connection)
    }

    /// The platform's place for an app's store named `name`: Application Support on
    /// Apple platforms, `$XDG_DATA_HOME` (or `~/.local/share`) on Linux, in a `Converge`
    /// folder, created if needed.
    public static func defaultPath(forName name: String) throws(ConvergeError) -> String {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
            throw .storage(.invalidName, path: name, operation: .open, detail: "use a name without \"/\"")
        }
        let base: URL
        #if os(Linux)
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            base = URL(fileURLWithPath: xdg)
        } else {
            base = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share")
        }
        #else
        guard let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first else {
            throw .storage(.cannotOpen, path: "Application Support", operation: .create, detail: "no application-support folder")
        }
        base = support
        #endif
        let folder = base.appendingPathComponent("Converge")
        do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
            throw .storage(StorageFailure.Kind(error), path: folder.path, operation: .create, detail: error.localizedDescription)
        }
        return folder.appendingPathComponent(name + ".sqlite").path
    }

    /// Refuses a file that exists but does not start like an SQLite database, or is cut
    /// short, before SQLite gets a chance to treat it as empty.
    private static func checkHeader(_ path: String) throws(ConvergeError) {
        guard let handle = FileHandle(forReadingAtPath: path) else { return }  // new file, or unreadable: SQLite says which
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 100)) ?? Data()
        if header.isEmpty { return }  // an empty file is a new database
        guard header.count == 100, header.prefix(16) == Data("SQLite format 3\0".utf8) else {
            throw .storage(.notADatabase, path: path, operation: .open)
        }
        let pageSize = Int(header[16]) << 8 | Int(header[17])
        let pages = Int(header[28]) << 24 | Int(header[29]) << 16 | Int(header[30]) << 8 | Int(header[31])
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let realPageSize = pageSize == 1 ? 65_536 : pageSize
        if pages > 0 && size < pages * realPageSize && !FileManager.default.fileExists(atPath: path + "-wal") {
            throw .storage(.corrupt, path: path, operation: .open,
                           detail: "the file is truncated: \(size) bytes, the header says \(pages * realPageSize)")
        }
    }

    // MARK: Storage

    public func load() throws(ConvergeError) -> StoredState? {
        try connection.withLock { (db: inout SQLiteConnection) throws(ConvergeError) -> StoredState? in
            let stateRows = try db.execute("SELECT name, value FROM state", doing: .read)
            guard !stateRows.isEmpty else { return nil }
            var context = VersionVector()
            var clock = HybridTimestamp.zero
            for row in stateRows {
                guard let name = row[0].text, let bytes = row[1].blob else { throw corrupt("a state row is not text and bytes") }
                var reader = BinaryReader(bytes)
                switch name {
                case "context":
                    context = try decoding("the context") { () throws(ConvergeError) in try VersionVector(from: &reader) }
                case "clock":
                    clock = try decoding("the clock") { () throws(ConvergeError) in
                        HybridTimestamp(wallMilliseconds: try reader.readVarint(), logical: UInt32(truncatingIfNeeded: try reader.readVarint()))
                    }
                default: throw corrupt("unknown state row \"\(name)\"")
                }
            }
            var entries: [String: [Sibling]] = [:]
            for row in try db.execute("SELECT key, siblings FROM entries", doing: .read) {
                guard let key = row[0].text, let bytes = row[1].blob else { throw corrupt("an entry is not text and bytes") }
                let delta = try decoding("the entry \"\(key)\"") { () throws(ConvergeError) in try ReplicatedMap.Delta(encoded: bytes) }
                guard delta.entries.count == 1, let siblings = delta.entries[key] else { throw corrupt("the entry \"\(key)\" holds another key") }
                entries[key] = siblings
            }
            var metadata: [String: [UInt8]] = [:]
            for row in try db.execute("SELECT name, value FROM metadata", doing: .read) {
                guard let name = row[0].text, let bytes = row[1].blob else { throw corrupt("a metadata row is not text and bytes") }
                metadata[name] = bytes
            }
            let map = try decoding("the stored state") { () throws(ConvergeError) in try ReplicatedMap(entries: entries, context: context) }
            return StoredState(map: map, clock: clock, metadata: metadata)
        }
    }

    public func save(_ change: StorageChange) throws(ConvergeError) {
        try connection.withLock { (db: inout SQLiteConnection) throws(ConvergeError) in
            try db.transaction { () throws(ConvergeError) in try write(change, to: db) }
        }
    }

    public func replaceAll(with state: StoredState) throws(ConvergeError) {
        try connection.withLock { (db: inout SQLiteConnection) throws(ConvergeError) in
            try db.transaction { () throws(ConvergeError) in
                try db.execute("DELETE FROM entries")
                try db.execute("DELETE FROM metadata")
                try write(StorageChange(entries: state.map.entries, context: state.map.context, clock: state.clock,
                                        metadata: state.metadata.mapValues { $0 }), to: db)
            }
        }
    }

    /// Writes a change inside the caller's transaction, keys in byte order.
    private func write(_ change: StorageChange, to db: SQLiteConnection) throws(ConvergeError) {
        let insert = try db.prepare("INSERT OR REPLACE INTO entries (key, siblings) VALUES (?, ?)")
        let delete = try db.prepare("DELETE FROM entries WHERE key = ?")
        for key in change.entries.keys.sortedByUTF8() {
            let siblings = change.entries[key]!
            if siblings.isEmpty {
                try delete.run([.text(key)])
            } else {
                var context = VersionVector()
                for sibling in siblings { context.raise(sibling.dot.replica, to: sibling.dot.counter) }
                let bytes = ReplicatedMap.Delta(entries: [key: siblings], context: context).encoded()
                try insert.run([.text(key), .blob(bytes)])
            }
        }
        var context = BinaryWriter()
        change.context.encode(into: &context)
        try db.execute("INSERT OR REPLACE INTO state (name, value) VALUES ('context', ?)", [.blob(context.bytes)])
        var clock = BinaryWriter()
        clock.writeVarint(change.clock.wallMilliseconds)
        clock.writeVarint(UInt64(change.clock.logical))
        try db.execute("INSERT OR REPLACE INTO state (name, value) VALUES ('clock', ?)", [.blob(clock.bytes)])
        for name in change.metadata.keys.sortedByUTF8() {
            if let record = change.metadata[name]! {
                try db.execute("INSERT OR REPLACE INTO metadata (name, value) VALUES (?, ?)", [.text(name), .blob(record)])
            } else {
                try db.execute("DELETE FROM metadata WHERE name = ?", [.text(name)])
            }
        }
    }

    /// Runs SQLite's full integrity check; returns its findings (`["ok"]` when sound).
    public func integrityCheck() throws(ConvergeError) -> [String] {
        try connection.withLock { (db: inout SQLiteConnection) throws(ConvergeError) -> [String] in
            try db.execute("PRAGMA integrity_check", doing: .check).compactMap { $0.first?.text }
        }
    }

    private func corrupt(_ detail: String) -> ConvergeError {
        .storage(.corrupt, path: path, operation: .read, detail: detail)
    }

    private func decoding<T>(_ what: String, _ body: () throws(ConvergeError) -> T) throws(ConvergeError) -> T {
        do { return try body() } catch { throw corrupt("\(what) does not decode: \(error)") }
    }
}
