import CLibPQ
import Converge
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One connection to a PostgreSQL server through libpq, used by one thread at a time (the
/// pool hands it out).
///
/// Parameters and results travel in PostgreSQL's binary format, so `bytea` values are
/// never escaped and integers never printed and parsed. A connection that broke (the
/// server restarted, the network failed) is reopened before its next use.
///
/// Nothing waits for ever: the server is asked to cancel a statement (or a wait for a lock)
/// that takes longer than the timeout, and a server that does not answer at all (paused,
/// or cut off by the network) is given up on a little later, closing the connection.
final class PostgreSQLConnection {
    private var handle: OpaquePointer?
    /// The connection string as given (it may hold a password: never print it).
    private let connectionString: String
    /// Where the connection goes, without the password: for errors and logs.
    let location: String
    /// The longest a statement, a lock wait or a connection attempt may take.
    let timeoutMilliseconds: Int

    /// Opens a connection.
    ///
    /// - Parameter connectionString: A `postgresql://` URI or `key=value` pairs, as libpq
    ///   reads them (TLS, passwords and the `PG*` environment variables as libpq provides).
    /// - Throws: ``PostgreSQLError`` if the string is malformed or the server cannot be reached.
    init(_ connectionString: String, timeoutMilliseconds: Int) throws(PostgreSQLError) {
        self.connectionString = connectionString
        self.timeoutMilliseconds = max(100, timeoutMilliseconds)
        location = try Self.redacted(connectionString)
        try open()
    }

    deinit {
        close()
    }

    private func open() throws(PostgreSQLError) {
        close()
        // The defaults come before the caller's string, so what it sets wins.
        let settings: [(String, String)] = [
            ("connect_timeout", "\(max(2, (timeoutMilliseconds + 999) / 1_000))"),
            ("keepalives", "1"), ("keepalives_idle", "10"), ("keepalives_interval", "5"), ("keepalives_count", "3"),
            ("dbname", connectionString),
        ]
        handle = withCStrings(settings.map(\.0)) { keywords in
            withCStrings(settings.map(\.1)) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let message = handle.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            throw PostgreSQLError(message: "cannot connect: \(message.trimmed)", sqlState: nil, connectionLost: true, location: location)
        }
        // The server's notices ("relation already exists, skipping") are not errors: by
        // default libpq prints them on standard error, between the hub's log lines.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        // Sending never blocks (a large state could fill the socket while the server is
        // paused); awaitResult flushes within the deadline.
        PQsetnonblocking(handle, 1)
        // The server cancels a statement or a lock wait past the timeout. Set after
        // connecting, so `options` in the connection string cannot take them away.
        try executeScript("SET statement_timeout = \(timeoutMilliseconds); SET lock_timeout = \(timeoutMilliseconds)")
    }

    private func close() {
        if let handle { PQfinish(handle) }
        handle = nil
    }

    /// Reopens the connection if it broke since its last use.
    func reconnectIfBroken() throws(PostgreSQLError) {
        guard isOpen else {
            try open()
            return
        }
    }

    /// Whether the connection is open and usable (not closed after a timeout, not broken).
    var isOpen: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// Whether the connection is not inside a transaction (a broken one counts: it is
    /// reopened before its next use).
    var isOutsideTransaction: Bool {
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return true }
        return PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// Runs one statement with `parameters` (`$1`, `$2`, …) and returns its rows.
    @discardableResult
    func execute(_ sql: String, _ parameters: [PostgreSQLValue] = []) throws(PostgreSQLError) -> [[PostgreSQLValue]] {
        try reconnectIfBroken()
        let encoded = parameters.map(\.binary)
        let types = parameters.map(\.typeOID)
        let lengths = encoded.map { Int32($0?.count ?? 0) }
        let formats = [Int32](repeating: 1, count: parameters.count)
        // libpq copies the parameters before returning, so pointers into the arrays suffice.
        let sent = withParameterPointers(encoded) { values in
            PQsendQueryParams(handle, sql, Int32(parameters.count), types, values, lengths, formats, 1)
        }
        guard sent == 1 else { throw failure() }
        return try rows(of: try awaitResult())
    }

    /// Runs statements separated by semicolons, with no parameters (the simple query
    /// protocol: one round trip for all of them).
    func executeScript(_ sql: String) throws(PostgreSQLError) {
        try reconnectIfBroken()
        guard PQsendQuery(handle, sql) == 1 else { throw failure() }
        _ = try rows(of: try awaitResult())
    }

    /// Waits for the answer to the statements sent, within the timeout (and a second more,
    /// for the server's own cancellation to arrive): the first failed result if any, else
    /// the last. A server that stays silent past that has its connection closed.
    private func awaitResult() throws(PostgreSQLError) -> OpaquePointer? {
        let deadline = MonotonicClock.nowNanoseconds() + UInt64(timeoutMilliseconds + 1_000) * 1_000_000
        // Send what is still queued (a large statement), reading meanwhile as libpq asks.
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { break }
            guard flushed == 1 else { throw failure() }
            try wait(for: Int16(POLLOUT) | Int16(POLLIN), until: deadline)
            guard PQconsumeInput(handle) == 1 else { throw failure() }
        }
        var kept: OpaquePointer?
        while true {
            while PQisBusy(handle) == 1 {
                do {
                    try wait(for: Int16(POLLIN), until: deadline)
                } catch {
                    if let kept { PQclear(kept) }
                    throw error
                }
                guard PQconsumeInput(handle) == 1 else {
                    if let kept { PQclear(kept) }
                    throw failure()
                }
            }
            guard let result = PQgetResult(handle) else { return kept }
            if let previous = kept, isFailure(previous) {
                PQclear(result)
            } else {
                if let previous = kept { PQclear(previous) }
                kept = result
            }
        }
    }

    /// Waits until the socket is ready for `events` (at most a second at a time); past
    /// `deadline` the connection is closed and the wait fails.
    private func wait(for events: Int16, until deadline: UInt64) throws(PostgreSQLError) {
        let now = MonotonicClock.nowNanoseconds()
        guard now < deadline else {
            close()
            throw PostgreSQLError(message: "the server did not answer within \(timeoutMilliseconds + 1_000) ms; the connection was closed",
                                  sqlState: nil, connectionLost: true, location: location)
        }
        var descriptor = pollfd(fd: PQsocket(handle), events: events, revents: 0)
        _ = poll(&descriptor, 1, Int32(min(1_000, (deadline - now) / 1_000_000 + 1)))
    }

    private func isFailure(_ result: OpaquePointer) -> Bool {
        let status = PQresultStatus(result)
        return status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && status != PGRES_EMPTY_QUERY
    }

    /// The connection's last error.
    private func failure() -> PostgreSQLError {
        PostgreSQLError(message: handle.map { String(cString: PQerrorMessage($0)).trimmed } ?? "no connection", sqlState: nil,
                        connectionLost: handle.map { PQstatus($0) != CONNECTION_OK } ?? true, location: location)
    }

    /// Runs `body` in a transaction: committed if it returns, rolled back if it throws.
    ///
    /// - Parameter begin: The statements that open it (`BEGIN`, and what must run first in
    ///   the same round trip, such as taking a lock).
    func transaction<Result>(begin: String = "BEGIN", _ body: () throws(HubError) -> Result) throws(HubError) -> Result {
        do {
            try executeScript(begin)
        } catch {
            if isOpen { try? executeScript("ROLLBACK") }   // the lock wait timed out, say
            throw error.hubError(operation: .write)
        }
        let result: Result
        do {
            result = try body()
        } catch {
            // A connection closed or broken meanwhile has no transaction left to roll back
            // (and reopening it just for that would wait for an unreachable server).
            if isOpen { try? executeScript("ROLLBACK") }
            throw error
        }
        do { try executeScript("COMMIT") } catch { throw error.hubError(operation: .write) }
        return result
    }

    private func rows(of result: OpaquePointer?) throws(PostgreSQLError) -> [[PostgreSQLValue]] {
        guard let result else { throw failure() }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            return []
        case PGRES_TUPLES_OK:
            let rowCount = PQntuples(result), columnCount = PQnfields(result)
            return (0..<rowCount).map { row in
                (0..<columnCount).map { column in
                    guard PQgetisnull(result, row, column) == 0 else { return .null }
                    let length = Int(PQgetlength(result, row, column))
                    let bytes = PQgetvalue(result, row, column).withMemoryRebound(to: UInt8.self, capacity: length) {
                        Array(UnsafeBufferPointer(start: $0, count: length))
                    }
                    return PostgreSQLValue(binary: bytes, typeOID: PQftype(result, column))
                }
            }
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            throw PostgreSQLError(message: String(cString: PQresultErrorMessage(result)).trimmed, sqlState: state,
                                  connectionLost: PQstatus(handle) != CONNECTION_OK, location: location)
        }
    }

    /// The connection string without its password: the `key=value` pairs libpq read from
    /// it that say where it goes.
    ///
    /// A password with an unencoded `@`, `/`, `:` or `%` makes libpq read parts of it as the
    /// host, port or database, or fail to parse the string with a message quoting it; such
    /// a string is refused without showing any of it, and libpq's message is not passed on.
    static func redacted(_ connectionString: String) throws(PostgreSQLError) -> String {
        let malformed = PostgreSQLError(
            message: "not a usable PostgreSQL connection string (not shown, as it may hold a password): "
                + "check its form, and percent-encode @ / : % and spaces in the password",
            sqlState: nil, connectionLost: false, location: "postgresql")
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &error) else {
            if let error { PQfreemem(error) }
            throw malformed
        }
        defer { PQconninfoFree(options) }
        var shown: [String] = []
        var option = options
        while let keyword = option.pointee.keyword {
            let name = String(cString: keyword)
            if ["host", "hostaddr", "port", "dbname", "user", "sslmode"].contains(name), let value = option.pointee.val {
                let text = String(cString: value)
                guard Self.isPlausible(text, for: name) else { throw malformed }
                shown.append("\(name)=\(text)")
            }
            option += 1
        }
        return shown.isEmpty ? "the default PostgreSQL server" : shown.joined(separator: " ")
    }

    /// Whether `value` can be what `keyword` names rather than a piece of a mis-read
    /// password: no `@` anywhere, a port of digits (several hosts: separated by commas).
    private static func isPlausible(_ value: String, for keyword: String) -> Bool {
        guard !value.contains("@"), !value.contains(where: { $0.isWhitespace }) else { return false }
        if keyword == "port" { return value.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ",") } }
        return true
    }
}

/// Calls `body` with a NULL-terminated C array of the strings.
private func withCStrings<Result>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> Result) -> Result {
    let copies = strings.map { strdup($0) }
    defer { for copy in copies { free(copy) } }
    return body(copies.map { UnsafePointer($0) } + [nil])
}

/// Calls `body` with a C array of pointers to each parameter's bytes (`NULL` for SQL null).
private func withParameterPointers<Result>(_ values: [[UInt8]?], _ body: ([UnsafePointer<CChar>?]) -> Result) -> Result {
    var pointers: [UnsafePointer<CChar>?] = []
    func next(_ index: Int) -> Result {
        guard index < values.count else { return body(pointers) }
        guard let bytes = values[index] else {
            pointers.append(nil)
            return next(index + 1)
        }
        // A zero-length value still needs a valid pointer (not NULL, which means SQL null).
        let nonEmpty = bytes.isEmpty ? [0] : bytes
        return nonEmpty.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { pointer in
                pointers.append(pointer)
                return next(index + 1)
            }
        }
    }
    return next(0)
}

/// A parameter or column in PostgreSQL's binary format.
enum PostgreSQLValue: Hashable {
    case text(String)
    case bytes([UInt8])
    case int64(Int64)
    case int32(Int32)
    case bool(Bool)
    case null
    /// A column of a type this code does not read.
    case other(typeOID: UInt32, [UInt8])

    static let textOID: Oid = 25, byteaOID: Oid = 17, int8OID: Oid = 20, int4OID: Oid = 23, boolOID: Oid = 16

    var typeOID: Oid {
        switch self {
        case .text: Self.textOID
        case .bytes: Self.byteaOID
        case .int64: Self.int8OID
        case .int32: Self.int4OID
        case .bool: Self.boolOID
        case .null: 0
        case .other(let oid, _): oid
        }
    }

    var binary: [UInt8]? {
        switch self {
        case .text(let text): Array(text.utf8)
        case .bytes(let bytes): bytes
        case .int64(let value): withUnsafeBytes(of: value.bigEndian) { Array($0) }
        case .int32(let value): withUnsafeBytes(of: value.bigEndian) { Array($0) }
        case .bool(let value): [value ? 1 : 0]
        case .null: nil
        case .other(_, let bytes): bytes
        }
    }

    init(binary bytes: [UInt8], typeOID: Oid) {
        switch typeOID {
        case Self.textOID, 1043 /* varchar */, 19 /* name */: self = .text(String(decoding: bytes, as: UTF8.self))
        case Self.byteaOID: self = .bytes(bytes)
        case Self.int8OID where bytes.count == 8: self = .int64(Int64(bigEndian: bytes.withUnsafeBytes { $0.loadUnaligned(as: Int64.self) }))
        case Self.int4OID where bytes.count == 4: self = .int32(Int32(bigEndian: bytes.withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }))
        case Self.boolOID where bytes.count == 1: self = .bool(bytes[0] != 0)
        default: self = .other(typeOID: typeOID, bytes)
        }
    }

    var text: String? { if case .text(let text) = self { text } else { nil } }
    var bytes: [UInt8]? { if case .bytes(let bytes) = self { bytes } else { nil } }
    var integer: Int64? {
        switch self {
        case .int64(let value): value
        case .int32(let value): Int64(value)
        default: nil
        }
    }
}

/// A failure reported by libpq or the server.
struct PostgreSQLError: Error, CustomStringConvertible {
    /// The server's or libpq's message.
    var message: String
    /// The SQLSTATE code, when the server sent one (`40P01`: deadlock, `23505`: unique violation).
    var sqlState: String?
    /// Whether the connection was lost (the next use reconnects).
    var connectionLost: Bool
    /// Where the connection goes, without its password.
    var location: String

    var description: String { sqlState.map { "\(message) (SQLSTATE \($0))" } ?? message }

    /// The hub error for this failure: a storage failure at the database.
    func hubError(operation: StorageFailure.Operation) -> HubError {
        let kind: StorageFailure.Kind = switch sqlState {
        case "53100": .diskFull
        case "42501": .permissionDenied
        case "25006": .readOnly
        case let state? where state.hasPrefix("08") || state.hasPrefix("57P"): .databaseUnreachable
        case nil where connectionLost: .databaseUnreachable
        default: .other
        }
        return .storage(StorageFailure(kind: kind, path: "PostgreSQL (\(location))", operation: operation, detail: description))
    }
}

extension String {
    /// Without the trailing newline libpq ends its messages with.
    fileprivate var trimmed: String {
        var text = self
        while text.last == "\n" || text.last == " " { text.removeLast() }
        return text
    }
}

extension StorageFailure.Kind {
    /// The database server cannot be reached, or the connection to it was lost (a hub on
    /// PostgreSQL: the server restarted or the network failed). Nothing was acknowledged;
    /// the next exchange reconnects.
    public static let databaseUnreachable = StorageFailure.Kind(rawValue: "databaseUnreachable")
}
