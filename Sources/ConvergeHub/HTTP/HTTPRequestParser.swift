/// Turns the bytes of a connection into HTTP/1.1 requests: a pure state machine (bytes in,
/// events out, no I/O), so it can be fuzzed like the sync decoder.
///
/// Feed it with ``append(_:)`` in chunks of any size and call ``next()`` until it asks for
/// more bytes. For each request it returns the ``Event/head(_:)`` first (so the server can
/// refuse a request, or send `100 Continue`, before the body arrives) and then the whole
/// ``Event/request(_:)``. Pipelined requests come out one after the other.
///
/// It reads only what the hub needs, strictly: request lines in origin form (absolute form
/// is reduced to it), CRLF line endings, no obsolete line folding, one `Content-Length`
/// (no `Transfer-Encoding` at all), and the bounds of ``HTTPLimits``. The first problem is
/// final: every later call returns the same ``Event/failure(_:)``, because after a
/// malformed request nobody knows where the next one starts.
///
/// - Complexity: O(*n*) for *n* bytes appended, however they are split: the search for the
///   end of the head resumes where the previous call stopped.
public struct HTTPRequestParser: Sendable {
    /// What the parser found.
    public enum Event: Hashable, Sendable {
        /// Nothing complete yet: append more bytes.
        case needMoreBytes
        /// The head of the next request; its body follows with ``request(_:)``.
        case head(HTTPRequestHead)
        /// A whole request (its head was returned before).
        case request(HTTPRequest)
        /// The bytes are not an acceptable request; the connection must be closed.
        case failure(HTTPParseError)
    }

    private enum State: Sendable {
        case head
        case body(HTTPRequestHead)
        case failed(HTTPParseError)
    }

    /// The bounds applied.
    public let limits: HTTPLimits
    private var buffer: [UInt8] = []
    /// The first byte not yet consumed.
    private var start = 0
    /// Where the scan for the end of the head resumes, relative to `start`: the start of
    /// the first line not yet complete.
    private var scanOffset = 0
    /// How many complete lines of the current head have been scanned.
    private var scannedLines = 0
    private var state = State.head

    /// Creates a parser with `limits`.
    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
    }

    /// How many bytes are buffered and not yet returned in a request.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Whether a request has begun (some of its bytes arrived) and not yet been returned whole.
    public var isInsideRequest: Bool {
        if case .body = state { return true }
        return bufferedByteCount > 0
    }

    /// How many more bytes the body being read needs, or 0 outside a body.
    public var remainingBodyBytes: Int {
        if case .body(let head) = state { return max(0, head.contentLength - bufferedByteCount) }
        return 0
    }

    /// Appends bytes received.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Appends bytes received.
    public mutating func append(contentsOf bytes: some Sequence<UInt8>) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Returns the next event: a head, a whole request, a failure, or a request for more bytes.
    public mutating func next() -> Event {
        switch state {
        case .failed(let error):
            return .failure(error)
        case .body(let head):
            guard buffer.count - start >= head.contentLength else { return .needMoreBytes }
            let body = Array(buffer[start..<(start + head.contentLength)])
            start += head.contentLength
            state = .head
            return .request(HTTPRequest(head: head, body: body))
        case .head:
            switch scanHead() {
            case .needMoreBytes:
                return .needMoreBytes
            case .failure(let error):
                state = .failed(error)
                return .failure(error)
            case .found(let headLength, let consumed):
                let lines = start..<(start + headLength)
                start += consumed
                scanOffset = 0
                scannedLines = 0
                switch Self.parseHead(buffer[lines], limits: limits) {
                case .success(let head):
                    state = .body(head)
                    return .head(head)
                case .failure(let error):
                    state = .failed(error)
                    return .failure(error)
                }
            }
        }
    }

    // MARK: Finding the end of the head

    private enum Scan {
        case needMoreBytes
        case failure(HTTPParseError)
        /// The head's lines take `headLength` bytes (each with its CRLF); `consumed` adds
        /// the empty line that ends the head.
        case found(headLength: Int, consumed: Int)
    }

    private mutating func scanHead() -> Scan {
        let end = buffer.count
        var lineStart = start + scanOffset
        var index = lineStart
        while index < end {
            if buffer[index] != 0x0A {
                index += 1
                continue
            }
            // First the checks an incomplete line gets (below) on the bytes before this LF,
            // so that where the chunks end never changes the answer.
            if let tooLong = incompleteLineFailure(lineStart: lineStart, end: index) { return .failure(tooLong) }
            guard index > lineStart, buffer[index - 1] == 0x0D else {
                return .failure(HTTPParseError(.malformed, "a line ends with LF alone (HTTP needs CRLF)"))
            }
            let lineLength = index - 1 - lineStart
            if lineLength == 0 {
                if scannedLines == 0 {
                    // Empty lines before a request line are ignored (RFC 9112, section 2.2).
                    start = index + 1
                    lineStart = start
                    index = start
                    continue
                }
                scanOffset = 0
                return .found(headLength: lineStart - start, consumed: index + 1 - start)
            }
            if scannedLines == 0 && lineLength > limits.maximumRequestLineBytes {
                return .failure(HTTPParseError(.requestLineTooLong, "the request line exceeds \(limits.maximumRequestLineBytes) bytes"))
            }
            // The size first, then the count: the order the check of an incomplete line
            // below would find them in, so chunking never changes the answer.
            lineStart = index + 1
            if lineStart - start > limits.maximumHeadBytes {
                return .failure(HTTPParseError(.headTooLarge, "the request head exceeds \(limits.maximumHeadBytes) bytes"))
            }
            scannedLines += 1
            if scannedLines > limits.maximumHeaderCount + 1 {
                return .failure(HTTPParseError(.headTooLarge, "more than \(limits.maximumHeaderCount) header fields"))
            }
            index += 1
        }
        scanOffset = lineStart - start
        // The line being received is incomplete: bound it before more arrives.
        if let tooLong = incompleteLineFailure(lineStart: lineStart, end: end) { return .failure(tooLong) }
        return .needMoreBytes
    }

    /// Whether the bytes of a line not yet ended (from `lineStart` to `end`) already break
    /// a limit, whatever follows.
    private func incompleteLineFailure(lineStart: Int, end: Int) -> HTTPParseError? {
        if scannedLines == 0 && end - lineStart > limits.maximumRequestLineBytes + 1 {
            return HTTPParseError(.requestLineTooLong, "the request line exceeds \(limits.maximumRequestLineBytes) bytes")
        }
        if end - start > limits.maximumHeadBytes + 2 {
            return HTTPParseError(.headTooLarge, "the request head exceeds \(limits.maximumHeadBytes) bytes")
        }
        return nil
    }

    /// Drops consumed bytes when that is worth a move.
    private mutating func compact() {
        guard start > 0 else { return }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
            start = 0
        } else if start >= 4_096 && start * 2 >= buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
    }
}

// MARK: Parsing a head

extension HTTPRequestParser {
    /// `tchar` of RFC 9110: the bytes of methods and field names.
    static let isTokenByte: [Bool] = (0...255).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(UInt8(byte))
        }
    }

    /// Parses the lines of a head (each ending with CRLF, without the final empty line).
    static func parseHead(_ bytes: ArraySlice<UInt8>, limits: HTTPLimits) -> Result<HTTPRequestHead, HTTPParseError> {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = bytes.startIndex
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == 0x0A {
                lines.append(bytes[lineStart..<(index - 1)])
                lineStart = index + 1
            }
            index += 1
        }
        guard let requestLine = lines.first else { return .failure(HTTPParseError(.malformed, "no request line")) }
        let method: String, target: String, minorVersion: Int
        switch parseRequestLine(requestLine) {
        case .success(let parsed): (method, target, minorVersion) = parsed
        case .failure(let error): return .failure(error)
        }
        var headers = HTTPHeaders()
        for line in lines.dropFirst() {
            switch parseField(line) {
            case .success(let field): headers.append(name: field.name, value: field.value)
            case .failure(let error): return .failure(error)
            }
        }
        return interpret(method: method, target: target, minorVersion: minorVersion, headers: headers, limits: limits)
    }

    private static func parseRequestLine(_ line: ArraySlice<UInt8>) -> Result<(String, String, Int), HTTPParseError> {
        guard let firstSpace = line.firstIndex(of: 0x20) else {
            return .failure(HTTPParseError(.malformed, "the request line is not METHOD TARGET VERSION"))
        }
        let methodBytes = line[line.startIndex..<firstSpace]
        guard !methodBytes.isEmpty, methodBytes.allSatisfy({ isTokenByte[Int($0)] }) else {
            return .failure(HTTPParseError(.malformed, "invalid method"))
        }
        let rest = line[(firstSpace + 1)...]
        guard let secondSpace = rest.firstIndex(of: 0x20) else {
            return .failure(HTTPParseError(.malformed, "the request line is not METHOD TARGET VERSION"))
        }
        let targetBytes = rest[rest.startIndex..<secondSpace]
        guard !targetBytes.isEmpty, targetBytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(HTTPParseError(.malformed, "invalid request target"))
        }
        let versionBytes = rest[(secondSpace + 1)...]
        guard versionBytes.count == 8, versionBytes.starts(with: "HTTP/".utf8) else {
            return .failure(HTTPParseError(.malformed, "invalid HTTP version"))
        }
        let major = versionBytes[versionBytes.startIndex + 5], dot = versionBytes[versionBytes.startIndex + 6]
        let minor = versionBytes[versionBytes.startIndex + 7]
        let isDigit = { (byte: UInt8) in byte >= 0x30 && byte <= 0x39 }
        guard isDigit(major), dot == UInt8(ascii: "."), isDigit(minor) else {
            return .failure(HTTPParseError(.malformed, "invalid HTTP version"))
        }
        guard major == UInt8(ascii: "1"), minor <= UInt8(ascii: "1") else {
            return .failure(HTTPParseError(.unsupportedVersion, "HTTP/\(major - 0x30).\(minor - 0x30) is not supported: use HTTP/1.1"))
        }
        guard let target = originForm(targetBytes) else {
            return .failure(HTTPParseError(.malformed, "the request target must be a path (origin form)"))
        }
        return .success((String(decoding: methodBytes, as: UTF8.self), target, Int(minor - 0x30)))
    }

    /// The origin form of a target: a path as is, the path of an absolute URL, `*` as is.
    private static func originForm(_ bytes: ArraySlice<UInt8>) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        if bytes.first == UInt8(ascii: "/") || text == "*" { return text }
        let lowered = text.lowercased()
        for scheme in ["http://", "https://"] where lowered.hasPrefix(scheme) {
            let afterScheme = text.dropFirst(scheme.count)
            guard let slash = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
            let rest = afterScheme[slash...]
            return rest.first == "?" ? "/" + rest : String(rest)
        }
        return nil
    }

    private static func parseField(_ line: ArraySlice<UInt8>) -> Result<(name: String, value: String), HTTPParseError> {
        if line.first == 0x20 || line.first == 0x09 {
            return .failure(HTTPParseError(.malformed, "obsolete line folding is not accepted"))
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            return .failure(HTTPParseError(.malformed, "a header line has no colon"))
        }
        let nameBytes = line[line.startIndex..<colon]
        guard !nameBytes.isEmpty, nameBytes.allSatisfy({ isTokenByte[Int($0)] }) else {
            return .failure(HTTPParseError(.malformed, "invalid header field name"))
        }
        var valueStart = colon + 1, valueEnd = line.endIndex
        while valueStart < valueEnd && (line[valueStart] == 0x20 || line[valueStart] == 0x09) { valueStart += 1 }
        while valueEnd > valueStart && (line[valueEnd - 1] == 0x20 || line[valueEnd - 1] == 0x09) { valueEnd -= 1 }
        let valueBytes = line[valueStart..<valueEnd]
        var ascii = true
        for byte in valueBytes {
            if byte >= 0x80 { ascii = false; continue }
            guard byte == 0x09 || (byte >= 0x20 && byte != 0x7F) else {
                return .failure(HTTPParseError(.malformed, "a control character in a header field value"))
            }
        }
        let name = String(decoding: nameBytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
        let value = ascii ? String(decoding: valueBytes, as: UTF8.self)
            : String(String.UnicodeScalarView(valueBytes.map { Unicode.Scalar($0) }))
        return .success((name, value))
    }

    /// Applies the header fields that shape the message: Host, Transfer-Encoding,
    /// Content-Length, Connection, Expect.
    private static func interpret(method: String, target: String, minorVersion: Int, headers: HTTPHeaders,
                                  limits: HTTPLimits) -> Result<HTTPRequestHead, HTTPParseError> {
        let hosts = headers.count(of: "host")
        if hosts > 1 || (minorVersion == 1 && hosts == 0) {
            return .failure(HTTPParseError(.malformed, hosts == 0 ? "an HTTP/1.1 request needs a Host field" : "several Host fields"))
        }
        if let encoding = headers["transfer-encoding"] {
            return .failure(HTTPParseError(.unsupportedTransferEncoding,
                                           "Transfer-Encoding \"\(encoding)\" is not supported: send the body with a Content-Length"))
        }
        var contentLength = 0
        switch headers.count(of: "content-length") {
        case 0: break
        case 1:
            let text = headers["content-length"]!
            guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let length = Int(text) else {
                return .failure(HTTPParseError(.malformed, "invalid Content-Length"))
            }
            guard length <= limits.maximumBodyBytes else {
                return .failure(HTTPParseError(.bodyTooLarge, "a body of \(length) bytes exceeds the limit of \(limits.maximumBodyBytes)"))
            }
            contentLength = length
        default:
            return .failure(HTTPParseError(.malformed, "several Content-Length fields"))
        }
        var asksToClose = false, asksToKeepAlive = false
        var expectsContinue = false
        for field in headers {
            switch field.name {
            case "connection":
                for option in field.value.split(separator: ",") {
                    switch option.trimmingSpaces.lowercased() {
                    case "close": asksToClose = true
                    case "keep-alive": asksToKeepAlive = true
                    default: break
                    }
                }
            case "expect":
                guard field.value.trimmingSpaces.lowercased() == "100-continue" else {
                    return .failure(HTTPParseError(.unsupportedExpectation, "Expect \"\(field.value)\" is not supported"))
                }
                // HTTP/1.0 clients cannot expect 100 Continue (RFC 9110, section 10.1.1).
                expectsContinue = minorVersion >= 1
            default:
                break
            }
        }
        // HTTP/1.1 keeps the connection unless asked not to; HTTP/1.0 only if asked to.
        let keepAlive = !asksToClose && (minorVersion >= 1 || asksToKeepAlive)
        return .success(HTTPRequestHead(method: method, target: target, minorVersion: minorVersion, headers: headers,
                                        contentLength: contentLength, keepAlive: keepAlive, expectsContinue: expectsContinue))
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    var trimmingSpaces: Substring {
        let text = Substring(self)
        guard let first = text.firstIndex(where: { $0 != " " && $0 != "\t" }) else { return text[text.endIndex...] }
        let last = text.lastIndex(where: { $0 != " " && $0 != "\t" })!
        return text[first...last]
    }
}
