import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A deliberately raw HTTP/1.1 client over a loopback socket: it sends exactly the bytes a
/// test gives (garbage included) and reads one response at a time.
final class RawHTTPClient {
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    enum Failure: Error, CustomStringConvertible {
        case connect(Int32)
        case closed
        case timedOut
        case malformed(String)

        var description: String {
            switch self {
            case .connect(let code): "cannot connect: \(String(cString: strerror(code)))"
            case .closed: "the server closed the connection"
            case .timedOut: "no response in time"
            case .malformed(let text): "malformed response: \(text)"
            }
        }
    }

    let descriptor: Int32
    private var buffer: [UInt8] = []

    init(port: UInt16, timeoutSeconds: Int = 10) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            close(descriptor)
            throw Failure.connect(code)
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return }
            offset += count
        }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Sends a request with a `Content-Length` body.
    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if method == "POST" || !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
        send(Array((head + "\r\n").utf8) + body)
        return try readResponse()
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = recv(descriptor, &chunk, chunk.count, 0)
        if count == 0 { throw Failure.closed }
        if count < 0 { throw errno == EAGAIN || errno == EWOULDBLOCK ? Failure.timedOut : Failure.closed }
        buffer += chunk[..<count]
    }

    /// Reads one response (skipping `100 Continue`).
    func readResponse() throws -> Response {
        while true {
            var end: Int?
            while end == nil {
                if buffer.count >= 4 {
                    for index in 0...(buffer.count - 4) where buffer[index] == 13 && buffer[index + 1] == 10
                        && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
                        end = index
                        break
                    }
                }
                if end == nil { try fill() }
            }
            let head = String(decoding: buffer[..<end!], as: UTF8.self)
            buffer.removeFirst(end! + 4)
            var lines = head.components(separatedBy: "\r\n")
            let statusLine = lines.removeFirst().split(separator: " ")
            guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw Failure.malformed(head) }
            var headers: [String: String] = [:]
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            if status == 100 { continue }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            while buffer.count < length { try fill() }
            let body = Array(buffer[..<length])
            buffer.removeFirst(length)
            return Response(status: status, headers: headers, body: body)
        }
    }

    /// Whether the server closed the connection (reads end of file within the timeout).
    func isClosedByServer() -> Bool {
        do {
            try fill()
            return false
        } catch Failure.closed {
            return true
        } catch {
            return false
        }
    }
}
