/// An HTTP status code and its reason phrase.
///
/// An open set, like swift-system's `Errno`: the statuses the hub sends are static members.
public struct HTTPStatus: Hashable, Sendable, CustomStringConvertible {
    /// The three-digit code.
    public var code: Int
    /// The reason phrase sent after the code.
    public var reasonPhrase: String

    /// Creates a status.
    public init(code: Int, reasonPhrase: String) {
        self.code = code
        self.reasonPhrase = reasonPhrase
    }

    /// 100: the client may send the body it announced with `Expect: 100-continue`.
    public static let `continue` = HTTPStatus(code: 100, reasonPhrase: "Continue")
    /// 200: the request succeeded.
    public static let ok = HTTPStatus(code: 200, reasonPhrase: "OK")
    /// 400: the request or the message it carries is malformed or refused.
    public static let badRequest = HTTPStatus(code: 400, reasonPhrase: "Bad Request")
    /// 401: the bearer token is missing or wrong.
    public static let unauthorized = HTTPStatus(code: 401, reasonPhrase: "Unauthorized")
    /// 403: the token belongs to another account than the message names.
    public static let forbidden = HTTPStatus(code: 403, reasonPhrase: "Forbidden")
    /// 404: no such path.
    public static let notFound = HTTPStatus(code: 404, reasonPhrase: "Not Found")
    /// 405: the path does not take this method.
    public static let methodNotAllowed = HTTPStatus(code: 405, reasonPhrase: "Method Not Allowed")
    /// 408: the client was too slow to send its request.
    public static let requestTimeout = HTTPStatus(code: 408, reasonPhrase: "Request Timeout")
    /// 411: a body needs a `Content-Length`.
    public static let lengthRequired = HTTPStatus(code: 411, reasonPhrase: "Length Required")
    /// 413: the body is larger than the limit.
    public static let contentTooLarge = HTTPStatus(code: 413, reasonPhrase: "Content Too Large")
    /// 414: the request line is longer than the limit.
    public static let uriTooLong = HTTPStatus(code: 414, reasonPhrase: "URI Too Long")
    /// 415: the body is not of a type the path takes.
    public static let unsupportedMediaType = HTTPStatus(code: 415, reasonPhrase: "Unsupported Media Type")
    /// 417: an `Expect` header the server does not meet.
    public static let expectationFailed = HTTPStatus(code: 417, reasonPhrase: "Expectation Failed")
    /// 431: the head is larger, or has more fields, than the limits.
    public static let requestHeaderFieldsTooLarge = HTTPStatus(code: 431, reasonPhrase: "Request Header Fields Too Large")
    /// 500: the server failed.
    public static let internalServerError = HTTPStatus(code: 500, reasonPhrase: "Internal Server Error")
    /// 501: a feature of HTTP the server does not implement (chunked bodies).
    public static let notImplemented = HTTPStatus(code: 501, reasonPhrase: "Not Implemented")
    /// 503: the server cannot answer now (too many connections, storage failing); try again later.
    public static let serviceUnavailable = HTTPStatus(code: 503, reasonPhrase: "Service Unavailable")
    /// 505: not HTTP/1.0 or HTTP/1.1.
    public static let httpVersionNotSupported = HTTPStatus(code: 505, reasonPhrase: "HTTP Version Not Supported")

    /// "200 OK".
    public var description: String { "\(code) \(reasonPhrase)" }
}
