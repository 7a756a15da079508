import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes one line per request to standard error, as `key=value` pairs (logfmt): the
/// time, the request, its status, sizes and duration, the client, and the handler's fields
/// (account, device, kind of sync). Values with spaces or quotes are quoted.
public final class RequestLog: HTTPServerObserver {
    private let lock = ParkingLock(())
    private let write: @Sendable (String) -> Void

    /// Creates a log writing each line with `write` (to standard error by default, one
    /// `write(2)` per line).
    public init(write: @escaping @Sendable (String) -> Void = RequestLog.writeToStandardError) {
        self.write = write
    }

    /// Writes `line` to standard error in one system call (a line of a few hundred bytes
    /// is never interleaved with another's).
    @Sendable public static func writeToStandardError(_ line: String) {
        var line = line
        line.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
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
            ("duration_ms", Self.milliseconds(record.durationSeconds)),
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
        var line = ""
        line.reserveCapacity(256)
        for field in fields {
            if !line.isEmpty { line += " " }
            line += field.key
            line += "="
            line += Self.quoted(field.value)
        }
        line += "\n"
        lock.withLock { _ in write(line) }
    }

    static func quoted(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.utf8.contains { byte in
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "=") || byte == UInt8(ascii: "\\") || byte < 0x20
        }
        guard needsQuotes else { return value }
        var escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        escaped = escaped.replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\r", with: "\\r")
        return "\"\(escaped)\""
    }

    /// Seconds as milliseconds with three decimals ("0.412"), without `String(format:)`,
    /// which costs more than the rest of the line.
    static func milliseconds(_ seconds: Double) -> String {
        let microseconds = max(0, Int((seconds * 1_000_000).rounded()))
        return "\(microseconds / 1_000).\(padded(microseconds % 1_000, 3))"
    }

    private static func padded(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    /// The current time in UTC, ISO 8601 with milliseconds.
    static func timestamp() -> String {
        var value = timeval()
        gettimeofday(&value, nil)
        var seconds = value.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return "\(padded(Int(parts.tm_year) + 1900, 4))-\(padded(Int(parts.tm_mon) + 1, 2))-\(padded(Int(parts.tm_mday), 2))T"
            + "\(padded(Int(parts.tm_hour), 2)):\(padded(Int(parts.tm_min), 2)):\(padded(Int(parts.tm_sec), 2)).\(padded(Int(value.tv_usec) / 1_000, 3))Z"
    }
}

/// Passes what the server does to several observers (the metrics and the log).
public struct HTTPServerObservers: HTTPServerObserver {
    /// The observers told of every event, in order.
    public let observers: [any HTTPServerObserver]

    /// Forwards every event to each of `observers`.
    public init(_ observers: [any HTTPServerObserver]) {
        self.observers = observers
    }

    public func requestFinished(_ record: HTTPRequestRecord) { observers.forEach { $0.requestFinished(record) } }
    public func openConnectionsChanged(to count: Int) { observers.forEach { $0.openConnectionsChanged(to: count) } }
    public func connectionRefused(remote: String) { observers.forEach { $0.connectionRefused(remote: remote) } }
}
