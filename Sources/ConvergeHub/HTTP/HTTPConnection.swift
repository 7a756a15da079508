#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Serves one connection on its own thread: reads requests with the parser, under the
/// server's deadlines, and writes the handler's responses, until the client closes, a
/// request says so, something goes wrong, or the server shuts down.
struct HTTPConnection {
    let server: HTTPServer
    let descriptor: Int32
    let remote: String
    private var parser: HTTPRequestParser
    private var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)
    /// Bytes of the current request received so far (for the log and metrics).
    private var bytesReceived = 0

    init(server: HTTPServer, descriptor: Int32, remote: String) {
        self.server = server
        self.descriptor = descriptor
        self.remote = remote
        parser = HTTPRequestParser(limits: server.configuration.limits)
    }

    private var configuration: HTTPServerConfiguration { server.configuration }

    /// Serves requests until the connection should close.
    mutating func run() {
        while serveOneRequest() {}
    }

    /// What reading more bytes gave.
    private enum ReadOutcome {
        case read
        case closed
        case timedOut
        case woken
    }

    /// Reads whatever bytes have arrived into the parser, waiting until `deadline`
    /// (monotonic nanoseconds), or until shutdown if `wakeOnShutdown`.
    private mutating func readMore(until deadline: UInt64, wakeOnShutdown: Bool) -> ReadOutcome {
        // Bytes already there (the next request of a busy client) need no wait: try first.
        let ready = readBuffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if ready > 0 {
            bytesReceived += ready
            readBuffer.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[..<ready])) }
            return .read
        }
        if ready == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) { return .closed }
        switch Socket.wait(descriptor, wake: wakeOnShutdown ? server.wake.read : nil,
                           timeoutMilliseconds: MonotonicClock.millisecondsUntil(deadline)) {
        case .timedOut: return .timedOut
        case .woken: return .woken
        case .failed: return .closed
        case .ready: break
        }
        let count = readBuffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return .closed }
        bytesReceived += count
        readBuffer.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        return .read
    }

    /// Serves one request; returns whether to go on with the next.
    private mutating func serveOneRequest() -> Bool {
        // Idle until a request begins: closed at once on shutdown, or after the idle timeout.
        if !parser.isInsideRequest {
            if server.isShuttingDown { return false }
            let idleDeadline = MonotonicClock.nowNanoseconds() + UInt64(configuration.idleTimeoutMilliseconds) * 1_000_000
            guard readMore(until: idleDeadline, wakeOnShutdown: true) == .read else { return false }
        }
        let started = MonotonicClock.nowNanoseconds()
        var deadline = started + UInt64(configuration.headTimeoutMilliseconds) * 1_000_000
        var head: HTTPRequestHead?
        defer { bytesReceived = parser.bufferedByteCount }
        while true {
            switch parser.next() {
            case .needMoreBytes:
                switch readMore(until: deadline, wakeOnShutdown: false) {
                case .read:
                    continue
                case .timedOut:
                    let phase = head == nil ? "head" : "body"
                    finish(HTTPResponse.text(.requestTimeout, "the request's \(phase) took too long to arrive", rejection: "timeout"),
                           head: head, started: started, closing: true)
                    return false
                case .closed, .woken:
                    // The client went away in the middle of a request: nobody to answer.
                    record(head: head, status: 0, sent: 0, started: started, rejection: "incomplete", fields: [])
                    return false
                }
            case .failure(let error):
                finish(HTTPResponse.text(error.status, error.description, rejection: error.kind.rawValue), head: head,
                       started: started, closing: true)
                return false
            case .head(let parsed):
                head = parsed
                if let refusal = server.handler.admit(parsed) {
                    // A body not read cannot be skipped safely: close unless there is none.
                    let closing = refusal.closesConnection || parsed.contentLength > 0 || !parsed.keepAlive || server.isShuttingDown
                    finish(refusal, head: parsed, started: started, closing: closing)
                    if closing { return false }
                    _ = parser.next()  // the empty body of the refused request
                    return true
                }
                if parsed.expectsContinue && parser.remainingBodyBytes > 0 {
                    guard write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return false }
                }
                let allowance = UInt64(parsed.contentLength) * 1_000 / UInt64(max(1, configuration.minimumBodyBytesPerSecond))
                deadline = MonotonicClock.nowNanoseconds() + (UInt64(configuration.bodyTimeoutMilliseconds) + allowance) * 1_000_000
            case .request(let request):
                let response = server.handler.respond(to: request)
                let closing = response.closesConnection || !request.head.keepAlive || server.isShuttingDown
                finish(response, head: request.head, started: started, closing: closing)
                return !closing
            }
        }
    }

    /// Writes a response and reports the request.
    private mutating func finish(_ response: HTTPResponse, head: HTTPRequestHead?, started: UInt64, closing: Bool) {
        let bytes = response.serializedHead(date: server.dates.current(), closing: closing) + response.body
        let written = write(bytes)
        record(head: head, status: response.status.code, sent: written ? bytes.count : 0, started: started,
               rejection: response.rejection, fields: response.logFields)
    }

    private func record(head: HTTPRequestHead?, status: Int, sent: Int, started: UInt64, rejection: String?,
                        fields: [(key: String, value: String)]) {
        guard let observer = server.observer else { return }
        let received = bytesReceived - parser.bufferedByteCount
        observer.requestFinished(HTTPRequestRecord(
            method: head?.method ?? "-", path: head.map { String($0.path) } ?? "-", status: status,
            bytesReceived: max(0, received), bytesSent: sent,
            durationSeconds: Double(MonotonicClock.nowNanoseconds() - started) / 1e9, remote: remote,
            rejection: rejection, logFields: fields))
    }

    /// Writes all of `bytes` within the write timeout; `false` if the client is gone or too slow.
    private func write(_ bytes: [UInt8]) -> Bool {
        let deadline = MonotonicClock.nowNanoseconds() + UInt64(configuration.writeTimeoutMilliseconds) * 1_000_000
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                send(descriptor, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if count > 0 {
                offset += count
                continue
            }
            guard count < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { return false }
            guard case .ready = Socket.wait(descriptor, forWriting: true, timeoutMilliseconds: MonotonicClock.millisecondsUntil(deadline)) else {
                return false
            }
        }
        return true
    }
}
