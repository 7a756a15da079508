/// What the server calls to answer requests: the hub service, or a test's handler.
public protocol HTTPRequestHandler: Sendable {
    /// Decides on a request from its head, before its body is read: return a response to
    /// refuse it (an unknown path, a missing token), or `nil` to read the body and call
    /// ``respond(to:)``. Refusing here means a client without a token cannot make the
    /// server read and buffer a large body.
    func admit(_ head: HTTPRequestHead) -> HTTPResponse?

    /// Answers a whole request.
    func respond(to request: HTTPRequest) -> HTTPResponse
}

/// One finished request, as the server reports it to its observer (for logs and metrics).
public struct HTTPRequestRecord: Sendable {
    /// The request's method, or "-" if the request could not be parsed.
    public var method: String
    /// The request's path, without its query, or "-" if it could not be parsed.
    public var path: String
    /// The status code of the response.
    public var status: Int
    /// Bytes of the request: head and body.
    public var bytesReceived: Int
    /// Bytes of the response: head and body.
    public var bytesSent: Int
    /// The time from the first byte of the request to the last byte of the response.
    public var durationSeconds: Double
    /// The client's address.
    public var remote: String
    /// Why the request was refused (a parse error's kind, a timeout, the handler's reason).
    public var rejection: String?
    /// The handler's fields for the log line.
    public var logFields: [(key: String, value: String)]
}

/// Receives what the server does, for logs and metrics. Called on connection threads:
/// implementations synchronize themselves.
public protocol HTTPServerObserver: Sendable {
    /// A request was answered (or refused before it was whole).
    func requestFinished(_ record: HTTPRequestRecord)
    /// The number of open connections changed.
    func openConnectionsChanged(to count: Int)
    /// A connection was refused because ``HTTPServerConfiguration/maximumConnections`` were open.
    func connectionRefused(remote: String)
}
