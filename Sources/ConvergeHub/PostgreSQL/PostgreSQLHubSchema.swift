import Converge

/// The hub's tables in PostgreSQL, as numbered migrations.
///
/// Every table's name starts with `converge_hub_`, so the hub can share a database with
/// other applications. `converge_hub_migrations` records each migration applied; a hub
/// applies the ones it lacks in one transaction, under an advisory lock, so hubs starting at
/// once on an empty database migrate it once. A database migrated by a newer version is
/// refused, never changed. A database already up to date is not changed either, so a role
/// with only `SELECT`, `INSERT` and `UPDATE` on the tables (and `SELECT` on the migrations)
/// can serve it once its owner migrated it.
public enum PostgreSQLHubSchema {
    /// The advisory-lock class of Converge's hub ("CvgH"): the first key of every lock the
    /// hub takes (an account's, and the migrations').
    static let lockClass: Int32 = 0x4376_6748

    /// The migrations, in order: migration `n` is `migrations[n - 1]`.
    static let migrations: [String] = [
        """
        CREATE TABLE converge_hub_accounts (
            account text PRIMARY KEY,
            revision bigint NOT NULL CHECK (revision > 0),
            state bytea NOT NULL,
            checksum bytea NOT NULL);
        CREATE TABLE converge_hub_tokens (
            hash bytea PRIMARY KEY,
            account text NOT NULL,
            created_ms bigint NOT NULL)
        """,
    ]

    /// The schema version this build writes: the number of its migrations.
    public static var currentVersion: Int { migrations.count }

    /// Brings the database's schema up to ``currentVersion``.
    static func migrate(_ connection: PostgreSQLConnection) throws(HubError) {
        func run<T>(_ body: () throws(PostgreSQLError) -> T) throws(HubError) -> T {
            do { return try body() } catch { throw error.hubError(operation: .create) }
        }
        try connection.transaction(begin: "BEGIN; SELECT pg_advisory_xact_lock(\(lockClass), 0)") { () throws(HubError) in
            // A database already up to date needs no DDL, so a role with only SELECT,
            // INSERT and UPDATE on the tables can serve it.
            let exists = try run { () throws(PostgreSQLError) in
                try connection.execute("SELECT to_regclass('converge_hub_migrations') IS NOT NULL").first?.first == .bool(true)
            }
            let applied = !exists ? 0 : try run { () throws(PostgreSQLError) in
                try connection.execute("SELECT coalesce(max(version), 0) FROM converge_hub_migrations").first?.first?.integer ?? 0
            }
            guard applied <= Int64(currentVersion) else {
                throw .storage(StorageFailure(kind: .newerSchema, path: "PostgreSQL (\(connection.location))", operation: .open,
                                              detail: "schema version \(applied); this converge-hub knows up to \(currentVersion)"))
            }
            if !exists && applied < currentVersion {
                try run { () throws(PostgreSQLError) in
                    try connection.executeScript("""
                        CREATE TABLE converge_hub_migrations (
                            version integer PRIMARY KEY,
                            applied_at timestamptz NOT NULL DEFAULT now())
                        """)
                }
            }
            for version in 1...currentVersion where version > applied {
                try run { () throws(PostgreSQLError) in
                    try connection.executeScript(migrations[version - 1])
                    try connection.execute("INSERT INTO converge_hub_migrations (version) VALUES ($1)", [.int32(Int32(version))])
                }
            }
        }
    }
}
