import Converge

/// Why an exchange with a hub over HTTP brought no answer to apply.
public enum HubTransportError: SyncTransportFailure, Hashable, Sendable, CustomStringConvertible {
    /// The hub refused the request, and sending it again would not help: `401` (a wrong or
    /// missing token), `403` (the token belongs to another account), `400` (the hub
    /// refused the message), or another `4xx`. Nothing changed at the hub.
    case refused(status: Int, message: String)
    /// The hub answered that it could not serve the request (`5xx`, `408`, `429`) on every
    /// attempt; the last status and its text.
    case unavailable(status: Int, message: String, attempts: Int)
    /// No HTTP answer arrived on any attempt (the hub is unreachable, the connection
    /// failed, or it timed out); the last error.
    case unreachable(String, attempts: Int)
    /// The answer was not a sync answer the client can take (too large, or a `2xx` other
    /// than `200`).
    case invalidAnswer(String)

    /// Whether trying again later may succeed (the hub or the network may recover): a
    /// store sends a refused request again in an older format, not one that may pass.
    public var isTransient: Bool {
        switch self {
        case .unavailable, .unreachable: return true
        case .refused, .invalidAnswer: return false
        }
    }

    /// Whether the hub refused the message itself (`400`: it could not read it, or would not
    /// take it), not the token (`401`, `403`): only then does a store send it again in an
    /// older format.
    public var refusedTheMessage: Bool {
        if case .refused(status: 400, _) = self { return true }
        return false
    }

    /// A sentence for logs and people.
    public var description: String {
        switch self {
        case .refused(let status, let message): return "the hub refused the request (HTTP \(status)): \(message)"
        case .unavailable(let status, let message, let attempts):
            return "the hub could not serve the request (HTTP \(status), \(attempts) attempt(s)): \(message)"
        case .unreachable(let error, let attempts): return "the hub could not be reached (\(attempts) attempt(s)): \(error)"
        case .invalidAnswer(let detail): return "the hub's answer cannot be used: \(detail)"
        }
    }
}
