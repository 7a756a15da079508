import Converge
import ConvergeSQLite
import Foundation

/// The hub's durable state in one SQLite file, `hub.sqlite` in the data folder: WAL
/// journal, `synchronous=FULL` (a write that returned survives `kill -9` and power loss),
/// each account's state as one row with a revision and a SHA-256 checksum checked on every
/// read, and the tokens' hashes.
///
/// One connection writes (SQLite has one writer at a time anyway), committing the writes of
/// concurrent exchanges together (`GroupCommit`); another reads tokens, so authenticating
/// never waits behind a commit. `converge-hub token create` may add tokens
/// while a hub serves the same folder.
public final class SQLiteHubStateStore: HubStateStore {
    /// The file's name in the data folder.
    public static let fileName = "hub.sqlite"
    /// Marks the database as a Converge hub's (`PRAGMA application_id`): "CvgH".
    static let applicationID: Int64 = 0x4376_6748
    static let schemaVersion: Int64 = 1

    /// The database file.
    public let path: String
    private let writer: ParkingLock<Statements>
    private let reader: ParkingLock<Statements>
    private let commits = GroupCommit<AccountWrite, Result<UInt64?, HubError>>()

    /// A connection and its prepared statements (preparing once per call costs more than
    /// the statement).
    private final class Statements {
        let connection: SQLiteConnection
        let load: SQLiteConnection.Statement
        let insert: SQLiteConnection.Statement
        let update: SQLiteConnection.Statement
        let token: SQLiteConnection.Statement
        let revision: SQLiteConnection.Statement

        init(_ connection: SQLiteConnection) throws(ConvergeError) {
            self.connection = connection
            load = try connection.prepare("SELECT revision, state, checksum FROM accounts WHERE account = ?", doing: .read)
            insert = try connection.prepare(
                "INSERT INTO accounts (account, revision, state, checksum) VALUES (?, 1, ?, ?) ON CONFLICT (account) DO NOTHING RETURNING revision")
            update = try connection.prepare(
                "UPDATE accounts SET revision = revision + 1, state = ?, checksum = ? WHERE account = ? AND revision = ? RETURNING revision")
            token = try connection.prepare("SELECT account FROM tokens WHERE hash = ?", doing: .read)
            revision = try connection.prepare("SELECT revision, checksum FROM accounts WHERE account = ?", doing: .read)
        }
    }

    /// Opens (or creates) the hub's database in `folder`, creating the folder if needed.
    ///
    /// - Throws: ``HubError/storage(_:)`` if the folder or file cannot be created or opened,
    ///   is not a Converge hub's database, was written by a newer version, or fails its
    ///   integrity check. A file that is not a hub's is never changed.
    public init(folder: String) throws(HubError) {
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw .storage(StorageFailure(kind: .cannotOpen, path: folder, operation: .create, detail: error.localizedDescription))
        }
        path = URL(fileURLWithPath: folder).appendingPathComponent(Self.fileName).path
        do {
            let connection = try SQLiteConnection(path: path)
            try Self.prepareSchema(connection, path: path)
            writer = ParkingLock(try Statements(connection))
            reader = ParkingLock(try Statements(try SQLiteConnection(path: path)))
        } catch {
            throw HubError(error)
        }
    }

    private static func prepareSchema(_ connection: SQLiteConnection, path: String) throws(ConvergeError) {
        let applicationID = try connection.execute("PRAGMA application_id", doing: .read).first?.first?.integer ?? 0
        let version = try connection.execute("PRAGMA user_version", doing: .read).first?.first?.integer ?? 0
        let tables = try connection.execute("SELECT count(*) FROM sqlite_master", doing: .read).first?.first?.integer ?? 0
        if applicationID != Self.applicationID && !(applicationID == 0 && tables == 0) {
            throw .storage(StorageFailure(kind: .foreignStore, path: path, operation: .open,
                                          detail: "not a Converge hub's database (application_id \(applicationID))"))
        }
        if version > Self.schemaVersion {
            throw .storage(StorageFailure(kind: .newerSchema, path: path, operation: .open, detail: "schema version \(version)"))
        }
        let check = try connection.execute("PRAGMA quick_check", doing: .check).first?.first?.text ?? "?"
        guard check == "ok" else { throw .storage(StorageFailure(kind: .corrupt, path: path, operation: .check, detail: check)) }
        let mode = try connection.execute("PRAGMA journal_mode=WAL", doing: .open).first?.first?.text ?? ""
        guard mode.lowercased() == "wal" else {
            throw .storage(StorageFailure(kind: .unsupported, path: path, operation: .open, detail: "no WAL journal (\(mode))"))
        }
        try connection.execute("PRAGMA synchronous=FULL")
        if version < Self.schemaVersion {
            try connection.transaction { () throws(ConvergeError) in
                try connection.execute("""
                    CREATE TABLE IF NOT EXISTS accounts (
                        account TEXT PRIMARY KEY NOT NULL,
                        revision INTEGER NOT NULL,
                        state BLOB NOT NULL,
                        checksum BLOB NOT NULL)
                    """)
                try connection.execute("""
                    CREATE TABLE IF NOT EXISTS tokens (
                        hash BLOB PRIMARY KEY NOT NULL,
                        account TEXT NOT NULL,
                        created_ms INTEGER NOT NULL)
                    """)
                try connection.execute("PRAGMA application_id=\(Self.applicationID)")
                try connection.execute("PRAGMA user_version=\(Self.schemaVersion)")
            }
        }
    }

    /// Reads the version on the reading connection, so the check never waits behind a
    /// commit's flush; it sees every committed write, this process's and others'.
    public func storedVersion(of account: AccountID) throws(HubError) -> HubStoredVersion? {
        let rows: [[SQLiteConnection.Column]]
        do {
            rows = try reader.withLock { statements throws(ConvergeError) in try statements.revision.run([.text(account.rawValue)]) }
        } catch {
            throw HubError(error)
        }
        guard let row = rows.first else { return nil }
        guard row.count == 2, let revision = row[0].integer, revision > 0, let checksum = row[1].blob else {
            throw .storage(StorageFailure(kind: .corrupt, path: path, operation: .read, detail: "account \(account): a malformed row"))
        }
        return HubStoredVersion(revision: UInt64(revision), checksum: checksum)
    }

    public func loadAccount(_ account: AccountID) throws(HubError) -> HubStoredAccount? {
        let rows: [[SQLiteConnection.Column]]
        do {
            rows = try writer.withLock { statements throws(ConvergeError) in try statements.load.run([.text(account.rawValue)]) }
        } catch {
            throw HubError(error)
        }
        guard let row = rows.first else { return nil }
        guard row.count == 3, let revision = row[0].integer, revision > 0, let state = row[1].blob, let checksum = row[2].blob else {
            throw .storage(StorageFailure(kind: .corrupt, path: path, operation: .read, detail: "account \(account): a malformed row"))
        }
        guard BearerToken.constantTimeEquals(SHA256.digest(state), checksum) else {
            throw .storage(StorageFailure(kind: .corrupt, path: path, operation: .read, detail: "account \(account): checksum mismatch"))
        }
        return HubStoredAccount(revision: UInt64(revision), state: state)
    }

    /// Stores `state` as `account`'s if its revision is still `expectedRevision`, in a
    /// transaction shared with the writes of other accounts arriving meanwhile (one flush
    /// of the disk for all of them); returns once that transaction has committed.
    public func storeAccount(_ account: AccountID, state: [UInt8], replacing expectedRevision: UInt64) throws(HubError) -> UInt64? {
        let write = AccountWrite(account: account, state: state, checksum: SHA256.digest(state), expectedRevision: expectedRevision)
        return try commits.submit(write, run: runBatch).get()
    }

    /// One account's state to write, over the revision it was computed from.
    struct AccountWrite {
        var account: AccountID
        var state: [UInt8]
        var checksum: [UInt8]
        var expectedRevision: UInt64
    }

    /// Runs a batch of account writes in one transaction. A write whose revision moved gets
    /// `nil` (the others still commit); if anything fails, all roll back and share the error.
    private func runBatch(_ writes: [AccountWrite]) -> [Result<UInt64?, HubError>] {
        do {
            let revisions = try writer.withLock { statements throws(ConvergeError) -> [UInt64?] in
                try statements.connection.transaction { () throws(ConvergeError) -> [UInt64?] in
                    var revisions: [UInt64?] = []
                    for write in writes {
                        let rows = write.expectedRevision == 0
                            ? try statements.insert.run([.text(write.account.rawValue), .blob(write.state), .blob(write.checksum)])
                            : try statements.update.run([.blob(write.state), .blob(write.checksum), .text(write.account.rawValue),
                                                         .integer(Int64(write.expectedRevision))])
                        revisions.append(rows.first?.first?.integer.map { UInt64($0) })
                    }
                    return revisions
                }
            }
            return revisions.map { .success($0) }
        } catch {
            return writes.map { _ in .failure(HubError(error)) }
        }
    }

    public func accountIDs() throws(HubError) -> [AccountID] {
        do {
            let rows = try reader.withLock { statements throws(ConvergeError) in
                try statements.connection.execute("SELECT account FROM accounts", doing: .read)
            }
            return rows.compactMap { $0.first?.text.flatMap(AccountID.init) }.sorted()
        } catch {
            throw HubError(error)
        }
    }

    public func addToken(hash: [UInt8], account: AccountID, createdMilliseconds: UInt64) throws(HubError) {
        do {
            try writer.withLock { statements throws(ConvergeError) in
                _ = try statements.connection.execute("INSERT INTO tokens (hash, account, created_ms) VALUES (?, ?, ?)",
                                                  [.blob(hash), .text(account.rawValue), .integer(Int64(clamping: createdMilliseconds))])
            }
        } catch {
            throw HubError(error)
        }
    }

    public func account(forTokenHash hash: [UInt8]) throws(HubError) -> AccountID? {
        do {
            let rows = try reader.withLock { statements throws(ConvergeError) in try statements.token.run([.blob(hash)]) }
            return rows.first?.first?.text.flatMap(AccountID.init)
        } catch {
            throw HubError(error)
        }
    }
}
