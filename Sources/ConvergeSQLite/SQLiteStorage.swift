import CSQLite
import Converge
import Foundation
import Synchronization

/// A durable `Storage` on the system SQLite library: a WAL journal, one transaction per
/// save (so a write the store reports as done survives `kill -9` and power loss), a schema
/// version with migrations from the first version on, and an integrity check at open.
///
/// Any number of processes and `SQLiteStorage` objects may open one file and write it at
/// once. Every write transaction advances a sequence number kept in the file and stamps
/// the rows it writes with it, so a writer catches up with exactly the rows others wrote
/// since it last looked (``catchUp(since:)``), inside its own exclusive transaction
/// (``write(since:_:)``: `BEGIN IMMEDIATE`). A deletion or a rewrite of the whole state
/// (an account switch) makes the others reload everything instead. Creating a new file is
/// one transaction too: processes that create the same file at once all open one store.
///
/// A file that is not a Converge store (another program's database, a truncated or
/// corrupt file) is refused at open with an error naming the path; it is never
/// overwritten or reset.
public final class SQLiteStorage: Storage {
    /// The file's path.
    public let path: String
    /// Whether the file was opened only to read (see ``init(path:readOnly:)``).
    public let isReadOnly: Bool
    private let connection: Mutex<SQLiteConnection>

    /// Marks a database as a Converge store (`PRAGMA application_id`): "Cvg1".
    static let applicationID: Int64 = 0x4376_6731
    /// The schema version this build writes; older files are migrated at open.
    public static let schemaVersion: Int64 = 3

    /// Migrations: the statements that take a file from version `index` to `index + 1`.
    static let migrations: [[String]] = [
        [
            "CREATE TABLE entries (key TEXT PRIMARY KEY NOT NULL, siblings BLOB NOT NULL) WITHOUT ROWID",
            "CREATE TABLE state (name TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL) WITHOUT ROWID",
            "CREATE TABLE metadata (name TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL) WITHOUT ROWID",
        ],
        // Version 2: several writers. `seq` is the sequence number of the write that last
        // wrote a row; the state rows "sequence" and "rewritten" (absent means 0) hold the
        // latest write's number and that of the latest write that deleted or replaced rows.
        [
            "ALTER TABLE entries ADD COLUMN seq INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE metadata ADD COLUMN seq INTEGER NOT NULL DEFAULT 0",
            "CREATE INDEX entries_by_seq ON entries (seq)",
        ],
        // Version 3: every record ends with a CRC-32C of its name and value (see
        // `SQLiteRecord`); the migration seals the records in Swift.
        [],
    ]

    /// Opens (or creates) the store file at `path`.
    ///
    /// - Throws: `ConvergeError.storage(_:)` naming `path`, with the kind of failure:
    ///   `.cannotOpen`, `.permissionDenied` or `.readOnly` if the file cannot be opened or
    ///   created; `.notADatabase` or `.foreignStore` if it is not a Converge store;
    ///   `.corrupt` if it is damaged or truncated; `.newerSchema` if a newer version of
    ///   Converge wrote it; `.locked` if another process holds it. Nothing is changed then.
    ///
    /// - Parameters:
    ///   - path: The store's file; created (with its folder's permission) unless `readOnly`.
    ///   - readOnly: Opens an existing file only to read it, as a file or folder this
    ///     process may not write: nothing is created, migrated or changed, and every save
    ///     throws `.readOnly`. A file of an older schema must be opened writable once.
    public init(path: String, readOnly: Bool = false) throws(ConvergeError) {
        self.path = path
        self.isReadOnly = readOnly
        try Self.checkHeader(path)
        if readOnly {
            guard FileManager.default.fileExists(atPath: path) else {
                throw .storage(.cannotOpen, path: path, operation: .open, detail: "no such file (a read-only open creates nothing)")
            }
            connection = Mutex(try Self.openForReading(path))
            return
        }
        // What the main file holds on its own, before SQLite reads the -wal beside it.
        let mainFileMark = Self.mainFileMark(path)
        let connection = try SQLiteConnection(path: path)
        // Until the -wal is known to belong to this file, closing must not write it in.
        connection.setCheckpointOnClose(false)
        // Identify before changing anything: a foreign database must stay untouched.
        // Both read from one snapshot: another process may be creating the file right now.
        let (applicationID, objects) = try connection.transaction(writing: false) { () throws(ConvergeError) -> (Int64, Int64) in
            (try connection.execute("PRAGMA application_id", doing: .read).first?.first?.integer ?? 0,
             try connection.execute("SELECT count(*) FROM sqlite_master", doing: .read).first?.first?.integer ?? 0)
        }
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
        if let mainFileMark {
            try Self.check(journalMark: (try? Self.mark(of: connection)) ?? nil, against: mainFileMark, path: path)
        }
        connection.setCheckpointOnClose(true)
        let mode = try Self.enableWAL(on: connection)
        guard mode.lowercased() == "wal" else {
            throw .storage(.unsupported, path: path, operation: .open, detail: "the WAL journal could not be enabled: \(mode)")
        }
        try connection.execute("PRAGMA synchronous=FULL")
        if version < Self.schemaVersion {
            try connection.transaction { () throws(ConvergeError) in
                // Another process may have created or migrated the file since it was read
                // above: read again under the write lock, so it happens exactly once.
                let version = try connection.execute("PRAGMA user_version", doing: .read).first?.first?.integer ?? 0
                guard version < Self.schemaVersion else { return }
                for step in Int(version)..<Int(Self.schemaVersion) {
                    for statement in Self.migrations[step] { try connection.execute(statement) }
                }
                if version < 3 { try SQLiteRecord.sealEveryRecord(in: connection) }
                // The file's identity, which a -wal beside it must carry too (see `mark(of:)`).
                try connection.execute("INSERT OR IGNORE INTO state (name, value) VALUES ('store-id', ?)",
                                       [.blob(Array(UUID().uuidString.utf8))])
                try connection.execute("PRAGMA application_id=\(Self.applicationID)")
                try connection.execute("PRAGMA user_version=\(Self.schemaVersion)")
            }
        }
        self.connection = Mutex(connection)
    }

    /// Switches `connection` to the WAL journal and returns the mode SQLite reports.
    ///
    /// A new file's first switch takes an exclusive lock, and SQLite answers `SQLITE_BUSY`
    /// at once (without its busy handler) to another process switching the same new file at
    /// the same moment: that one tries again, for up to five seconds, as the busy timeout
    /// would have waited.
    private static func enableWAL(on connection: SQLiteConnection) throws(ConvergeError) -> String {
        var attempts = 0
        while true {
            do {
                return try connection.execute("PRAGMA journal_mode=WAL", doing: .open).first?.first?.text ?? ""
            } catch .storage(let failure) where failure.kind == .locked && attempts < 100 {
                attempts += 1
                usleep(50_000)
            }
        }
    }

    // MARK: The -wal beside the file

    /// A file's identity and write sequence number, as recorded in its state rows.
    struct Mark: Equatable {
        var storeID: [UInt8]
        var sequence: UInt64
    }

    /// The mark of what `connection` reads (the main file with its -wal).
    static func mark(of connection: SQLiteConnection) throws(ConvergeError) -> Mark? {
        var storeID: [UInt8]?
        var sequence: UInt64 = 0
        for row in try connection.execute("SELECT name, value FROM state WHERE name IN ('store-id', 'sequence')", doing: .read) {
            guard let bytes = row[1].blob else { return nil }
            if row[0].text == "store-id" {
                storeID = bytes
            } else {
                var reader = BinaryReader(bytes)
                sequence = try reader.readVarint()
            }
        }
        return storeID.map { Mark(storeID: $0, sequence: sequence) }
    }

    /// The mark of the main file on its own, or `nil` if there is no -wal beside it (nothing
    /// to check) or the main file holds none (a new or older store).
    static func mainFileMark(_ path: String) -> Mark? {
        let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        guard size > 0, let main = try? SQLiteConnection(path: path, ignoringJournal: true) else { return nil }
        return (try? mark(of: main)) ?? nil
    }

    /// Refuses a -wal that does not continue the main file: one of another store, or an
    /// older copy of this one's (copied back beside it, it would silently undo writes).
    /// A -wal that another process is writing, or that a crash left, only ever adds writes.
    static func check(journalMark: Mark?, against main: Mark, path: String) throws(ConvergeError) {
        guard let journalMark else {
            throw .storage(.corrupt, path: path, operation: .open,
                           detail: "the -wal file beside it does not belong to it; move it away to open the store as it was")
        }
        if journalMark.storeID != main.storeID {
            throw .storage(.corrupt, path: path, operation: .open,
                           detail: "the -wal file beside it belongs to another store; move it away to open the store as it was")
        }
        if journalMark.sequence < main.sequence {
            throw .storage(.corrupt, path: path, operation: .open,
                           detail: "the -wal file beside it is an older copy (write \(journalMark.sequence), the file has \(main.sequence)) "
                               + "and would undo \(main.sequence - journalMark.sequence) writes; move it away to open the store as it was")
        }
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

    /// A read-only connection to an existing store, checked as a writable open checks it.
    /// SQLite reads a file in WAL mode through its `-shm` file, which a reader that may not
    /// write the folder cannot create; with no `-wal` content beside the file there is
    /// nothing that file would coordinate, so the main file is then read as it is on disk.
    private static func openForReading(_ path: String) throws(ConvergeError) -> SQLiteConnection {
        func identify(_ connection: SQLiteConnection) throws(ConvergeError) {
            let (applicationID, version) = try connection.transaction(writing: false) { () throws(ConvergeError) -> (Int64, Int64) in
                (try connection.execute("PRAGMA application_id", doing: .read).first?.first?.integer ?? 0,
                 try connection.execute("PRAGMA user_version", doing: .read).first?.first?.integer ?? 0)
            }
            guard applicationID == Self.applicationID else { throw .storage(.foreignStore, path: path, operation: .open) }
            guard version <= Self.schemaVersion else {
                throw .storage(.newerSchema, path: path, operation: .open, detail: "schema \(version), this one reads up to \(Self.schemaVersion)")
            }
            guard version == Self.schemaVersion else {
                throw .storage(.readOnly, path: path, operation: .open,
                               detail: "schema \(version) must be migrated to \(Self.schemaVersion): open it writable once")
            }
            let check = try connection.execute("PRAGMA quick_check", doing: .check).first?.first?.text ?? "?"
            guard check == "ok" else { throw .storage(.corrupt, path: path, operation: .open, detail: check) }
        }
        let mainFileMark = Self.mainFileMark(path)
        do {
            let connection = try SQLiteConnection(path: path, readOnly: true)
            try identify(connection)
            if let mainFileMark {
                try Self.check(journalMark: (try? Self.mark(of: connection)) ?? nil, against: mainFileMark, path: path)
            }
            return connection
        } catch let error {
            let walBytes = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            guard walBytes == 0, case .storage(let failure) = error, [.readOnly, .cannotOpen, .permissionDenied].contains(failure.kind) else {
                throw error
            }
            let connection = try SQLiteConnection(path: path, ignoringJournal: true)
            try identify(connection)
            return connection
        }
    }

    /// The error every save of a read-only storage throws.
    private var readOnlyError: ConvergeError {
        .storage(.readOnly, path: path, operation: .write, detail: "the store was opened read-only")
    }

    // MARK: Storage

    public func load() throws(ConvergeError) -> StoredState? {
        try connection.withLock { (db: inout SQLiteConnection) throws(ConvergeError) -> StoredState? in
            try db.transaction(writing: false) { () throws(ConvergeError) -> StoredState? in try loadState(from: db) }
        }
    }

    public func save(_ change: StorageChange) throws(ConvergeError) {
        try commit(.change(change))
    }

    public func replaceAll(with state: StoredState) throws(ConvergeError) {
        try commit(.replaceAll(state))
    }

    public func catchUp(since seen: UInt64?) throws(ConvergeError) -> StorageCatchUp {
        try connection.withLock { (db: inout SQLiteConnection) throws(ConvergeError) -> StorageCatchUp in
            try db.transaction(writing: false) { () throws(ConvergeError) -> StorageCatchUp in try catchUp(since: seen, in: db) }
        }
    }

    public func write(since seen: UInt64?, _ body: (StorageCatchUp) throws(ConvergeError) -> StorageUpdate?) throws(ConvergeError) -> UInt64 {
        if isReadOnly {
            // A write that turns out to change nothing succeeds; any other is refused.
            let caughtUp = try catchUp(since: seen)
            guard try body(caughtUp) == nil else { throw readOnlyError }
            return caughtUp.sequence
        }
        return try connection.withLock { (db: inout SQLiteConnection) throws(ConvergeError) -> UInt64 in
            try db.transaction { () throws(ConvergeError) -> UInt64 in
                let caughtUp = try catchUp(since: seen, in: db)
                guard let update = try body(caughtUp) else { return caughtUp.sequence }
                let next = caughtUp.sequence + 1
                try record(update, sequence: next, in: db)
                return next
            }
        }
    }

    /// Records `update` as one write transaction of its own.
    private func commit(_ update: StorageUpdate) throws(ConvergeError) {
        guard !isReadOnly else { throw readOnlyError }
        try connection.withLock { (db: inout SQLiteConnection) throws(ConvergeError) in
            try db.transaction { () throws(ConvergeError) in
                try record(update, sequence: try sequenceNumbers(in: db).sequence + 1, in: db)
            }
        }
    }

    // MARK: Reading

    /// The sequence number of the latest write, and of the latest write that deleted or
    /// replaced rows (a reader that has not seen it must reload everything).
    private func sequenceNumbers(in db: SQLiteConnection) throws(ConvergeError) -> (sequence: UInt64, rewritten: UInt64) {
        var numbers: (sequence: UInt64, rewritten: UInt64) = (0, 0)
        for row in try db.cached("SELECT name, value FROM state WHERE name IN ('sequence', 'rewritten')", doing: .read).run() {
            let (name, bytes) = try record(row, in: "state")
            var reader = BinaryReader(bytes)
            let number = try decoding("the \(name) number") { () throws(ConvergeError) in try reader.readVarint() }
            if name == "sequence" { numbers.sequence = number } else { numbers.rewritten = number }
        }
        return numbers
    }

    /// What others committed since `seen`, inside the caller's transaction: the rows
    /// stamped after it, or everything if rows were deleted or replaced since (or if the
    /// file went back, as a file replaced by an older copy does).
    private func catchUp(since seen: UInt64?, in db: SQLiteConnection) throws(ConvergeError) -> StorageCatchUp {
        let numbers = try sequenceNumbers(in: db)
        if let seen, seen == numbers.sequence { return StorageCatchUp(sequence: seen, update: nil) }
        guard let seen, seen < numbers.sequence, numbers.rewritten <= seen else {
            return StorageCatchUp(sequence: numbers.sequence, update: try loadState(from: db).map { .replaceAll($0) })
        }
        let (context, clock) = try readContextAndClock(from: db)
        // The whole context: this storage cannot know what the reader holds (a replica may
        // have left it, and a writer of an older version did not mark that a rewrite).
        var change = StorageChange(contextCounters: context.counterTable, replacesContext: true, clock: clock)
        for row in try db.cached("SELECT key, siblings FROM entries WHERE seq > ?", doing: .read).run([.integer(Int64(bitPattern: seen))]) {
            let (key, siblings) = try decodeEntry(row)
            change.entries[key] = siblings
        }
        for row in try db.cached("SELECT name, value FROM metadata WHERE seq > ?", doing: .read).run([.integer(Int64(bitPattern: seen))]) {
            let (name, bytes) = try record(row, in: "metadata")
            change.metadata[name] = bytes
        }
        return StorageCatchUp(sequence: numbers.sequence, update: .change(change))
    }

    /// The context and the clock, inside the caller's transaction.
    private func readContextAndClock(from db: SQLiteConnection) throws(ConvergeError) -> (VersionVector, HybridTimestamp) {
        var context = VersionVector()
        var clock = HybridTimestamp.zero
        for row in try db.cached("SELECT name, value FROM state WHERE name IN ('context', 'clock')", doing: .read).run() {
            let (name, bytes) = try record(row, in: "state")
            var reader = BinaryReader(bytes)
            if name == "context" {
                context = try decoding("the context") { () throws(ConvergeError) in try VersionVector(from: &reader) }
            } else {
                clock = try decoding("the clock") { () throws(ConvergeError) in
                    try HybridTimestamp(from: &reader)
                }
            }
        }
        return (context, clock)
    }

    /// One entry row: its key and siblings.
    private func decodeEntry(_ row: [SQLiteConnection.Column]) throws(ConvergeError) -> (String, [Sibling]) {
        let (key, bytes) = try record(row, in: "entries")
        let delta = try decoding("the entry \"\(key)\"") { () throws(ConvergeError) in try ReplicatedMap.Delta(encoded: bytes) }
        guard delta.entries.count == 1, let siblings = delta.entries[key] else { throw corrupt("the entry \"\(key)\" holds another key") }
        return (key, siblings)
    }

    /// Everything stored, or `nil` if nothing ever was, inside the caller's transaction.
    private func loadState(from db: SQLiteConnection) throws(ConvergeError) -> StoredState? {
        let stateRows = try db.cached("SELECT name FROM state", doing: .read).run()
        guard !stateRows.isEmpty else { return nil }
        for row in stateRows {
            guard let name = row[0].text else { throw corrupt("a state row is not text and bytes") }
            guard ["context", "clock", "sequence", "rewritten", "store-id"].contains(name) else { throw corrupt("unknown state row \"\(name)\"") }
        }
        let (context, clock) = try readContextAndClock(from: db)
        var entries: [String: [Sibling]] = [:]
        for row in try db.cached("SELECT key, siblings FROM entries", doing: .read).run() {
            let (key, siblings) = try decodeEntry(row)
            entries[key] = siblings
        }
        var metadata: [String: [UInt8]] = [:]
        for row in try db.cached("SELECT name, value FROM metadata", doing: .read).run() {
            let (name, bytes) = try record(row, in: "metadata")
            metadata[name] = bytes
        }
        let map = try decoding("the stored state") { () throws(ConvergeError) in try ReplicatedMap(entries: entries, context: context) }
        return StoredState(map: map, clock: clock, metadata: metadata)
    }

    // MARK: Writing

    /// Records `update` as write number `sequence`, inside the caller's transaction.
    private func record(_ update: StorageUpdate, sequence: UInt64, in db: SQLiteConnection) throws(ConvergeError) {
        let rewrites: Bool
        switch update {
        case .change(let change):
            // The context is one row: the counters that changed are set in it.
            var context = change.replacesContext ? VersionVector() : try readContextAndClock(from: db).0
            context.setCounters(change.contextCounters)
            try write(change, context: context, sequence: sequence, to: db)
            rewrites = change.deletesAnything
        case .replaceAll(let state):
            try db.execute("DELETE FROM entries")
            try db.execute("DELETE FROM metadata")
            try write(StorageChange(entries: state.map.entries, clock: state.clock, metadata: state.metadata.mapValues { $0 }),
                      context: state.map.context, sequence: sequence, to: db)
            rewrites = true
        }
        var number = BinaryWriter()
        number.writeVarint(sequence)
        try db.cached("INSERT OR REPLACE INTO state (name, value) VALUES ('sequence', ?)")
            .run([.blob(SQLiteRecord.sealed(number.bytes, name: "sequence"))])
        if rewrites {
            try db.cached("INSERT OR REPLACE INTO state (name, value) VALUES ('rewritten', ?)")
                .run([.blob(SQLiteRecord.sealed(number.bytes, name: "rewritten"))])
        }
    }

    /// Writes a change inside the caller's transaction, keys in byte order, stamping the
    /// rows with `sequence`, and `context` as the whole context after it.
    private func write(_ change: StorageChange, context wholeContext: VersionVector, sequence: UInt64, to db: SQLiteConnection) throws(ConvergeError) {
        let stamp = SQLiteConnection.Column.integer(Int64(bitPattern: sequence))
        let insert = try db.cached("INSERT OR REPLACE INTO entries (key, siblings, seq) VALUES (?, ?, ?)")
        let delete = try db.cached("DELETE FROM entries WHERE key = ?")
        for key in change.entries.keys.sortedByUTF8() {
            let siblings = change.entries[key]!
            // One row per key whatever its Unicode spelling (SQLite compares bytes; Swift,
            // and so the store, compares text): rows are keyed by normal form C.
            let row = ReplicatedKeyValueStore.canonicalSpelling(of: key)
            if siblings.isEmpty {
                try delete.run([.text(row)])
            } else {
                let bytes = ReplicatedMap.Delta.encodedEntry(forKey: key, siblings: siblings)
                try insert.run([.text(row), .blob(SQLiteRecord.sealed(bytes, name: row)), stamp])
            }
        }
        var context = BinaryWriter()
        wholeContext.encode(into: &context)
        try db.cached("INSERT OR REPLACE INTO state (name, value) VALUES ('context', ?)").run([.blob(SQLiteRecord.sealed(context.bytes, name: "context"))])
        var clock = BinaryWriter()
        change.clock.encode(into: &clock)
        try db.cached("INSERT OR REPLACE INTO state (name, value) VALUES ('clock', ?)").run([.blob(SQLiteRecord.sealed(clock.bytes, name: "clock"))])
        for name in change.metadata.keys.sortedByUTF8() {
            if let record = change.metadata[name]! {
                try db.cached("INSERT OR REPLACE INTO metadata (name, value, seq) VALUES (?, ?, ?)").run([.text(name), .blob(SQLiteRecord.sealed(record, name: name)), stamp])
            } else {
                try db.cached("DELETE FROM metadata WHERE name = ?").run([.text(name)])
            }
        }
    }

    /// Runs SQLite's full integrity check; returns its findings (`["ok"]` when sound).
    public func integrityCheck() throws(ConvergeError) -> [String] {
        try connection.withLock { (db: inout SQLiteConnection) throws(ConvergeError) -> [String] in
            try db.execute("PRAGMA integrity_check", doing: .check).compactMap { $0.first?.text }
        }
    }

    /// The name (or key) and value of a record row, checked against its checksum.
    private func record(_ row: [SQLiteConnection.Column], in table: String) throws(ConvergeError) -> (name: String, value: [UInt8]) {
        guard let name = row[0].text, let stored = row[1].blob else { throw corrupt("a row of \(table) is not text and bytes") }
        guard let value = SQLiteRecord.unsealed(stored, name: name) else {
            throw corrupt("the \(table) row \"\(name)\" is damaged: its CRC-32C does not match its name and value")
        }
        return (name, value)
    }

    private func corrupt(_ detail: String) -> ConvergeError {
        .storage(.corrupt, path: path, operation: .read, detail: detail)
    }

    private func decoding<T>(_ what: String, _ body: () throws(ConvergeError) -> T) throws(ConvergeError) -> T {
        do { return try body() } catch { throw corrupt("\(what) does not decode: \(error)") }
    }
}
