#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A few connections to one PostgreSQL database, opened when first needed and shared by
/// the hub's threads: a thread takes one, or waits while all are in use.
///
/// A connection is handed back only outside a transaction; one left inside (its rollback
/// failed) is closed instead, so the next user never inherits a half-done transaction.
final class PostgreSQLConnectionPool: @unchecked Sendable {
    // @unchecked Sendable: `idle` and `openCount` are read and written only under `mutex`;
    // a connection is used by the one thread that took it.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let returned = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var idle: [PostgreSQLConnection] = []
    private var openCount = 0
    private let connectionString: String
    private let timeoutMilliseconds: Int
    /// The most connections open at once.
    let maximumConnections: Int
    /// Where the connections go, without the password.
    let location: String

    /// A pool of at most `maximumConnections` connections (at least one) to
    /// `connectionString`, each giving up on a statement after `timeoutMilliseconds`; one
    /// is opened now, so a wrong address fails here.
    init(_ connectionString: String, maximumConnections: Int, timeoutMilliseconds: Int) throws(PostgreSQLError) {
        self.connectionString = connectionString
        self.timeoutMilliseconds = timeoutMilliseconds
        self.maximumConnections = max(1, maximumConnections)
        mutex.initialize(to: pthread_mutex_t())
        returned.initialize(to: pthread_cond_t())
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(returned, nil)
        let first = try PostgreSQLConnection(connectionString, timeoutMilliseconds: timeoutMilliseconds)
        location = first.location
        idle = [first]
        openCount = 1
    }

    deinit {
        idle.removeAll()
        pthread_cond_destroy(returned)
        pthread_mutex_destroy(mutex)
        returned.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with a connection of its own, waiting for one if all are in use.
    func withConnection<Result>(_ body: (PostgreSQLConnection) throws(HubError) -> Result) throws(HubError) -> Result {
        let connection = try take()
        defer { giveBack(connection) }
        return try body(connection)
    }

    private func take() throws(HubError) -> PostgreSQLConnection {
        pthread_mutex_lock(mutex)
        while idle.isEmpty && openCount >= maximumConnections { pthread_cond_wait(returned, mutex) }
        if let connection = idle.popLast() {
            pthread_mutex_unlock(mutex)
            return connection
        }
        openCount += 1
        pthread_mutex_unlock(mutex)
        do throws(PostgreSQLError) {
            return try PostgreSQLConnection(connectionString, timeoutMilliseconds: timeoutMilliseconds)
        } catch {
            pthread_mutex_lock(mutex)
            openCount -= 1
            pthread_cond_signal(returned)
            pthread_mutex_unlock(mutex)
            throw error.hubError(operation: .open)
        }
    }

    private func giveBack(_ connection: PostgreSQLConnection) {
        let reusable = connection.isOutsideTransaction
        pthread_mutex_lock(mutex)
        if reusable { idle.append(connection) } else { openCount -= 1 }
        pthread_cond_signal(returned)
        pthread_mutex_unlock(mutex)
    }
}
