import Foundation
import Synchronization

/// Writes one line per request to standard error, as `key=value` pairs (logfmt): the
/// time, the request, its status, sizes and duration, the client, and the handler's fields
/// (account, device, kind of sync). Values with spaces or quotes are quoted.
public final class RequestLog: HTTPServerObserver {
    private let lock = Mutex(())
    private let write: @Sendable (String) -> Void

    /// Creates a log writing each line with `write` (to standard error by default).
    public init(write: @escaping @Sendable (String) -> Void = { line in FileHandle.standardError.write(Data(line.utf8)) }) {
        self.write = write
    }

    /// Logs an event of the hub that is not a request (start, shutdown).
    public func event(_ message: String, _ fields: [(key: String, value: String)] = [], level: String = "info") {
        emit([("time", Self.timestamp()), ("level", level), ("msg", message)] + fields)
    }

    public func requestFinished(_ record: HTTPRequestRecord) {
        var fields: [(key: String, value: String)] = [
            ("time", Self.timestamp()), ("level", record.status >= 500 || record.status == 0 ? "warn" : "info"), ("msg", "request"),
            ("method", record.method), ("path", record.path), ("status", "\(record.status)"), ("remote", record.remote),
            ("bytes_in", "\(record.bytesReceived)"), ("bytes_out", "\(record.bytesSent)"),
            ("duration_ms", String(format: "%.3f", record.durationSeconds * 1_000)),
        ]
        if let rejection = record.rejection { fields.append(("rejected", rejection)) }
        emit(fields + record.logFields)
    }

    public func openConnectionsChanged(to count: Int) {}

    public func connectionRefused(remote: String) {
        emit([("time", Self.timestamp()), ("level", "warn"), ("msg", "connection refused"), ("reason", "too_many_connections"),
              ("remote", remote)])
    }

    private func emit(_ fields: [(key: String, value: String)]) {
        let line = fields.map { "\($0.key)=\(Self.quoted($0.value))" }.joined(separator: " ") + "\n"
        lock.withLock { _ in write(line) }
    }

    static func quoted(_ value: String) -> String {
        guard value.isEmpty || value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\\" || $0.isNewline }) else {
            return value
        }
        var escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        escaped = escaped.replacingOccurrences(of: "\n", with: "\\n")
        return "\"\(escaped)\""
    }

    /// The current time in UTC, ISO 8601 with milliseconds.
    static func timestamp() -> String {
        var value = timeval()
        gettimeofday(&value, nil)
        var seconds = value.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec, Int32(value.tv_usec / 1_000))
    }
}

/// Passes what the server does to several observers (the metrics and the log).
public struct HTTPServerObservers: HTTPServerObserver {
    public let observers: [any HTTPServerObserver]

    public init(_ observers: [any HTTPServerObserver]) {
        self.observers = observers
    }

    public func requestFinished(_ record: HTTPRequestRecord) { observers.forEach { $0.requestFinished(record) } }
    public func openConnectionsChanged(to count: Int) { observers.forEach { $0.openConnectionsChanged(to: count) } }
    public func connectionRefused(remote: String) { observers.forEach { $0.connectionRefused(remote: remote) } }
}
