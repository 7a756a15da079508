/// The header fields of a request, in the order received, with names lowercased.
///
/// Values are kept byte for byte: each byte is one Unicode scalar (ISO-8859-1, as HTTP
/// defines field values), so nothing is lost or guessed.
public struct HTTPHeaders: Hashable, Sendable, Sequence {
    /// The fields in order: lowercased name, value without surrounding whitespace.
    public private(set) var fields: [(name: String, value: String)] = []

    /// Creates headers from fields; names are lowercased.
    public init(_ fields: [(name: String, value: String)] = []) {
        for field in fields { append(name: field.name, value: field.value) }
    }

    /// Appends a field; the name is lowercased.
    public mutating func append(name: String, value: String) {
        fields.append((name.lowercased(), value))
    }

    /// The value of the first field named `name` (any case), or `nil`.
    public subscript(name: String) -> String? {
        let lowered = name.lowercased()
        return fields.first { $0.name == lowered }?.value
    }

    /// How many fields are named `name` (any case).
    public func count(of name: String) -> Int {
        let lowered = name.lowercased()
        return fields.reduce(0) { $0 + ($1.name == lowered ? 1 : 0) }
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(fields.count)
        for field in fields {
            hasher.combine(field.name)
            hasher.combine(field.value)
        }
    }
}

/// The head of a request: what the server knows before it reads the body.
public struct HTTPRequestHead: Hashable, Sendable {
    /// The method, as sent (methods are case-sensitive).
    public var method: String
    /// The request target in origin form (`/sync`, `/metrics?x`).
    public var target: String
    /// The minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    public var minorVersion: Int
    /// The header fields.
    public var headers: HTTPHeaders
    /// The length of the body (0 without a `Content-Length`).
    public var contentLength: Int
    /// Whether the client asked to keep the connection open after the response.
    public var keepAlive: Bool
    /// Whether the client waits for `100 Continue` before sending its body.
    public var expectsContinue: Bool

    /// The target without its query.
    public var path: Substring {
        target.firstIndex(of: "?").map { target[..<$0] } ?? target[...]
    }
}

/// A whole request: its head and its body.
public struct HTTPRequest: Hashable, Sendable {
    /// The request line and header fields.
    public var head: HTTPRequestHead
    /// The body: the `Content-Length` bytes that followed the head (empty if none).
    public var body: [UInt8]

    /// Creates a request from its head and body.
    public init(head: HTTPRequestHead, body: [UInt8]) {
        self.head = head
        self.body = body
    }
}
