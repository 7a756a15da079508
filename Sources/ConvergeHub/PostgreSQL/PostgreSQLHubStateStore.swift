import Converge

/// The hub's durable state in a PostgreSQL database, shared by any number of hub processes
/// (`converge-hub serve --database postgresql://…`).
///
/// Each exchange runs in one transaction on one pooled connection: it takes a
/// transaction-scoped advisory lock for its account (so exchanges of one account run one at a
/// time across every process, while other accounts run in parallel), reads the stored
/// revision (and the state only if it is not the one this process holds), and writes the new
/// state; the answer leaves after `COMMIT` returned, which with PostgreSQL's default
/// `synchronous_commit` means the write is on the server's disk. A process that dies or
/// loses its connection releases the lock with its session. Each state is stored with its
/// SHA-256, checked on every read.
///
/// The schema is versioned (``PostgreSQLHubSchema``); a process opening the database
/// applies the migrations it lacks, under a lock, and refuses a database a newer version
/// migrated.
public final class PostgreSQLHubStateStore: HubStateStore {
    private let pool: PostgreSQLConnectionPool

    /// Where the database is, without the password (for logs).
    public var location: String { pool.location }

    /// Connects to the database and brings its schema up to date.
    ///
    /// - Parameters:
    ///   - connectionString: A `postgresql://` URI or libpq's `key=value` pairs; TLS
    ///     (`sslmode`), passwords and the `PG*` environment variables work as libpq provides.
    ///   - maximumConnections: The most connections this process opens (exchanges beyond
    ///     wait for one).
    ///   - timeout: The longest a statement, a wait for an account's lock or a connection
    ///     attempt may take; past it the exchange fails (the device is answered 503 and
    ///     retries) instead of waiting for a server that is paused, cut off or holding the lock.
    /// - Throws: ``HubError/storage(_:)`` if the server cannot be reached, the schema was
    ///   written by a newer version, or a migration fails (nothing is changed then).
    public init(connectionString: String, maximumConnections: Int = 8, timeout: Duration = .seconds(10)) throws(HubError) {
        let milliseconds = Int(clamping: timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        do {
            pool = try PostgreSQLConnectionPool(connectionString, maximumConnections: maximumConnections, timeoutMilliseconds: milliseconds)
        } catch {
            throw error.hubError(operation: .open)
        }
        try pool.withConnection { connection throws(HubError) in try PostgreSQLHubSchema.migrate(connection) }
    }

    /// The two keys of an account's advisory lock: Converge's class and a hash of the
    /// account's name (two accounts sharing a hash only share a lock).
    static func lockKeys(of account: AccountID) -> (Int32, Int32) {
        var hash: UInt32 = 2_166_136_261   // FNV-1a
        for byte in account.rawValue.utf8 {
            hash = (hash ^ UInt32(byte)) &* 16_777_619
        }
        return (PostgreSQLHubSchema.lockClass, Int32(bitPattern: hash))
    }

    public func update<Result>(_ account: AccountID, known: HubStoredVersion?,
                               _ exchange: (HubStoredCopy) throws(HubError) -> (result: Result, write: [UInt8]?))
        throws(HubError) -> (result: Result, version: HubStoredVersion?) {
        let (lockClass, lockKey) = Self.lockKeys(of: account)
        return try pool.withConnection { connection throws(HubError) in
            try connection.transaction(begin: "BEGIN; SELECT pg_advisory_xact_lock(\(lockClass), \(lockKey))") { () throws(HubError) in
                // The state only if the stored copy is not the one the caller holds.
                let rows = try run(connection, operation: .read) { () throws(PostgreSQLError) in
                    try connection.execute("""
                        SELECT revision, checksum, CASE WHEN revision = $2 AND checksum = $3 THEN NULL ELSE state END
                        FROM converge_hub_accounts WHERE account = $1
                        """, [.text(account.rawValue), .int64(Int64(clamping: known?.revision ?? 0)), .bytes(known?.checksum ?? [])])
                }
                let copy: HubStoredCopy, base: HubStoredVersion?
                if let row = rows.first {
                    guard let revision = row[0].integer, revision > 0, let checksum = row[1].bytes else { throw malformedRow(account) }
                    let stored = HubStoredVersion(revision: UInt64(revision), checksum: checksum)
                    if stored == known {
                        (copy, base) = (.unchanged, known)
                    } else {
                        (copy, base) = (.changed(try checked(row[2], row[1], revision: revision, of: account)), stored)
                    }
                } else {
                    (copy, base) = (known == nil ? .unchanged : .changed(nil), nil)
                }
                let (result, write) = try exchange(copy)
                guard let write else { return (result, base) }
                let written = try compareAndSwap(account, state: write, replacing: base?.revision ?? 0, on: connection)
                // Under the lock nobody else writes the account: a miss means a process
                // that does not take it (an older version, or a hand-made change).
                guard let written else { throw HubError.contention(account) }
                return (result, HubStoredVersion(revision: written, checksum: SHA256.digest(write)))
            }
        }
    }

    public func storedVersion(of account: AccountID) throws(HubError) -> HubStoredVersion? {
        let rows = try query("SELECT revision, checksum FROM converge_hub_accounts WHERE account = $1", [.text(account.rawValue)])
        guard let row = rows.first else { return nil }
        guard let revision = row[0].integer, revision > 0, let checksum = row[1].bytes else { throw malformedRow(account) }
        return HubStoredVersion(revision: UInt64(revision), checksum: checksum)
    }

    public func loadAccount(_ account: AccountID) throws(HubError) -> HubStoredAccount? {
        let rows = try query("SELECT revision, state, checksum FROM converge_hub_accounts WHERE account = $1", [.text(account.rawValue)])
        guard let row = rows.first else { return nil }
        guard let revision = row[0].integer, revision > 0 else { throw malformedRow(account) }
        return try checked(row[1], row[2], revision: revision, of: account)
    }

    /// Writes in a transaction of its own, without the account's lock (compare-and-swap
    /// on the revision).
    public func storeAccount(_ account: AccountID, state: [UInt8], replacing expectedRevision: UInt64) throws(HubError) -> UInt64? {
        try pool.withConnection { connection throws(HubError) in
            try compareAndSwap(account, state: state, replacing: expectedRevision, on: connection)
        }
    }

    public func accountIDs() throws(HubError) -> [AccountID] {
        try query("SELECT account FROM converge_hub_accounts", []).compactMap { $0[0].text.flatMap(AccountID.init) }.sorted()
    }

    public func addToken(hash: [UInt8], account: AccountID, createdMilliseconds: UInt64) throws(HubError) {
        _ = try query("INSERT INTO converge_hub_tokens (hash, account, created_ms) VALUES ($1, $2, $3)",
                      [.bytes(hash), .text(account.rawValue), .int64(Int64(clamping: createdMilliseconds))], operation: .write)
    }

    public func account(forTokenHash hash: [UInt8]) throws(HubError) -> AccountID? {
        try query("SELECT account FROM converge_hub_tokens WHERE hash = $1", [.bytes(hash)]).first?[0].text.flatMap(AccountID.init)
    }

    // MARK: Helpers

    /// Writes `state` as `account`'s if its stored revision is `expectedRevision` (0: none
    /// stored); returns the new revision, or `nil` if the revision was another.
    private func compareAndSwap(_ account: AccountID, state: [UInt8], replacing expectedRevision: UInt64,
                                on connection: PostgreSQLConnection) throws(HubError) -> UInt64? {
        let rows = try run(connection, operation: .write) { () throws(PostgreSQLError) in
            expectedRevision == 0
                ? try connection.execute("""
                    INSERT INTO converge_hub_accounts (account, revision, state, checksum) VALUES ($1, 1, $2, $3)
                    ON CONFLICT (account) DO NOTHING RETURNING revision
                    """, [.text(account.rawValue), .bytes(state), .bytes(SHA256.digest(state))])
                : try connection.execute("""
                    UPDATE converge_hub_accounts SET revision = revision + 1, state = $2, checksum = $3
                    WHERE account = $1 AND revision = $4 RETURNING revision
                    """, [.text(account.rawValue), .bytes(state), .bytes(SHA256.digest(state)), .int64(Int64(clamping: expectedRevision))])
        }
        return rows.first?[0].integer.map { UInt64(clamping: $0) }
    }

    private func query(_ sql: String, _ parameters: [PostgreSQLValue],
                       operation: StorageFailure.Operation = .read) throws(HubError) -> [[PostgreSQLValue]] {
        try pool.withConnection { connection throws(HubError) in
            try run(connection, operation: operation) { () throws(PostgreSQLError) in try connection.execute(sql, parameters) }
        }
    }

    private func run<T>(_ connection: PostgreSQLConnection, operation: StorageFailure.Operation,
                        _ body: () throws(PostgreSQLError) -> T) throws(HubError) -> T {
        do { return try body() } catch { throw error.hubError(operation: operation) }
    }

    /// The stored account of a row's state and checksum columns, its checksum verified.
    private func checked(_ state: PostgreSQLValue, _ checksum: PostgreSQLValue, revision: Int64,
                         of account: AccountID) throws(HubError) -> HubStoredAccount {
        guard let state = state.bytes, let checksum = checksum.bytes else { throw malformedRow(account) }
        guard BearerToken.constantTimeEquals(SHA256.digest(state), checksum) else {
            throw .storage(StorageFailure(kind: .corrupt, path: "PostgreSQL (\(location))", operation: .read,
                                          detail: "account \(account): checksum mismatch"))
        }
        return HubStoredAccount(revision: UInt64(revision), state: state)
    }

    private func malformedRow(_ account: AccountID) -> HubError {
        .storage(StorageFailure(kind: .corrupt, path: "PostgreSQL (\(location))", operation: .read, detail: "account \(account): a malformed row"))
    }
}
