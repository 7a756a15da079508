/// A response the server sends: a status, header fields, a body, and what to log.
public struct HTTPResponse: Sendable {
    /// The status sent.
    public var status: HTTPStatus
    /// Fields besides `Content-Length`, `Date` and `Connection`, which the server writes.
    public var headers: [(name: String, value: String)]
    /// The body, sent with a `Content-Length`.
    public var body: [UInt8]
    /// Close the connection after this response (the server also closes after errors,
    /// for HTTP/1.0 clients and when shutting down).
    public var closesConnection: Bool
    /// `key=value` pairs the request's log line adds (the account, the kind of sync).
    public var logFields: [(key: String, value: String)]
    /// Why the request was refused, for the rejected-requests metric; `nil` if it was not.
    public var rejection: String?

    /// Creates a response; `closesConnection` ends the connection after it, `logFields`
    /// and `rejection` go to the request log and metrics.
    public init(status: HTTPStatus, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
                closesConnection: Bool = false, logFields: [(key: String, value: String)] = [], rejection: String? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.closesConnection = closesConnection
        self.logFields = logFields
        self.rejection = rejection
    }

    /// A plain-text response (a sentence and a newline), for errors and simple endpoints.
    public static func text(_ status: HTTPStatus, _ text: String, headers: [(name: String, value: String)] = [],
                            rejection: String? = nil) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")] + headers,
                     body: Array((text + "\n").utf8), rejection: rejection)
    }

    /// The bytes of the status line and header fields, ending with the empty line.
    ///
    /// - Parameters:
    ///   - date: The `Date` field's value (an IMF-fixdate).
    ///   - closing: Whether to announce `Connection: close`.
    func serializedHead(date: String, closing: Bool) -> [UInt8] {
        var text = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\n"
        for field in headers { text += "\(field.name): \(field.value)\r\n" }
        text += "Content-Length: \(body.count)\r\nDate: \(date)\r\n"
        if closing { text += "Connection: close\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }
}
