/// Why bytes received are not an acceptable HTTP/1.1 request: a kind to match on, the
/// status the server answers with, and a detail naming what was wrong.
///
/// After any of these the connection is closed: the server cannot know where the next
/// request would start.
public struct HTTPParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of problem.
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// Not HTTP/1.1 syntax (a bad request line, header line, or Content-Length).
        case malformed
        /// The request line is longer than ``HTTPLimits/maximumRequestLineBytes``.
        case requestLineTooLong
        /// The head is larger than ``HTTPLimits/maximumHeadBytes`` or has more than
        /// ``HTTPLimits/maximumHeaderCount`` fields.
        case headTooLarge
        /// The declared body is larger than ``HTTPLimits/maximumBodyBytes``.
        case bodyTooLarge
        /// A `Transfer-Encoding` (chunked or any other): the hub reads only
        /// `Content-Length` bodies.
        case unsupportedTransferEncoding
        /// An HTTP version other than 1.0 and 1.1.
        case unsupportedVersion
        /// An `Expect` other than `100-continue`.
        case unsupportedExpectation
    }

    /// The kind of problem.
    public var kind: Kind
    /// What was wrong, in words.
    public var detail: String

    /// Creates a parse error.
    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    /// The status the server answers with.
    public var status: HTTPStatus {
        switch kind {
        case .malformed: .badRequest
        case .requestLineTooLong: .uriTooLong
        case .headTooLarge: .requestHeaderFieldsTooLarge
        case .bodyTooLarge: .contentTooLarge
        case .unsupportedTransferEncoding: .notImplemented
        case .unsupportedVersion: .httpVersionNotSupported
        case .unsupportedExpectation: .expectationFailed
        }
    }

    public var description: String { "\(status): \(detail)" }
}
