import Converge
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `SyncTransport` that exchanges sync messages with a `converge-hub` over HTTP:
/// each request is a `POST /sync` of the message's bytes with the account's bearer token,
/// and the answer is the body of the `200` response.
///
/// Exchanges that bring no answer are retried under a ``RetryPolicy`` (network errors,
/// timeouts, `5xx`, `408` and `429`, honouring `Retry-After`); retrying is safe because
/// every exchange is idempotent. A refusal (`401`, `403`, `400`) is not retried: it throws
/// ``HubTransportError/refused(status:message:)`` at once.
///
/// ```swift
/// let transport = HubHTTPTransport(hub: URL(string: "https://hub.example.com")!, token: token)
/// let store = try ReplicatedKeyValueStore(replicaID: "phone", transport: transport, account: "alice",
///                                         storage: SQLiteStorage(path: path))
/// try await store.sync()
/// ```
public struct HubHTTPTransport: SyncTransport {
    /// The hub's base URL (`http://127.0.0.1:8080`, or the reverse proxy's `https://…`).
    public let hub: URL
    /// How failed exchanges are retried.
    public let retry: RetryPolicy
    /// How long one attempt may take, from sending the request to the last byte of the answer.
    public let timeout: Duration
    /// The largest answer accepted: a hub never sends more than one sync message.
    public static let maximumAnswerBytes = SyncMessage.maximumEncodedBytes + 65_536

    private let token: String
    private let randomFraction: @Sendable () -> Double
    private let sleep: @Sendable (Duration) async throws -> Void

    /// Creates a transport to the hub at `hub` with an account's bearer token.
    ///
    /// - Parameters:
    ///   - hub: The hub's base URL; requests go to its `/sync`.
    ///   - token: A token from `converge-hub token create`.
    ///   - retry: How failed exchanges are retried.
    ///   - timeout: How long one attempt may take.
    public init(hub: URL, token: String, retry: RetryPolicy = RetryPolicy(), timeout: Duration = .seconds(30)) {
        self.init(hub: hub, token: token, retry: retry, timeout: timeout,
                  randomFraction: { Double.random(in: 0...1) }, sleep: { try await Task.sleep(for: $0) })
    }

    /// A transport whose jitter and waits are given, for tests that must not wait.
    package init(hub: URL, token: String, retry: RetryPolicy, timeout: Duration,
                 randomFraction: @escaping @Sendable () -> Double, sleep: @escaping @Sendable (Duration) async throws -> Void) {
        self.hub = hub
        self.token = token
        self.retry = retry
        self.timeout = timeout
        self.randomFraction = randomFraction
        self.sleep = sleep
    }

    /// Posts `request` to the hub's `/sync` and returns the answer's bytes, retrying what
    /// may succeed later.
    ///
    /// - Throws: ``HubTransportError``, or `CancellationError` if the task is cancelled
    ///   while it waits to retry.
    public func exchange(_ request: [UInt8]) async throws -> [UInt8] {
        var post = URLRequest(url: hub.appendingPathComponent("sync"))
        post.httpMethod = "POST"
        post.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        return try await send(post, body: Data(request))
    }

    /// Asks the hub which account the token belongs to (`GET /account`).
    ///
    /// - Throws: ``HubTransportError``.
    public func account() async throws -> AccountID {
        var get = URLRequest(url: hub.appendingPathComponent("account"))
        get.httpMethod = "GET"
        let body = try await send(get, body: nil)
        let name = String(decoding: body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let account = AccountID(name) else { throw HubTransportError.invalidAnswer("\"\(name)\" is not an account name") }
        return account
    }

    /// Sends `request` with the token until it gets a `200`, a refusal, or runs out of attempts.
    private func send(_ request: URLRequest, body: Data?) async throws -> [UInt8] {
        var request = request
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.timeoutInterval = RetryPolicy.seconds(timeout)
        var attempt = 1
        while true {
            let failure: HubTransportError
            var retryAfter: Duration?
            do {
                let (data, http) = try await HubHTTPSession.shared.send(request, body: body, limit: Self.maximumAnswerBytes)
                switch http.statusCode {
                case 200:
                    return [UInt8](data)
                case 408, 429, 500...599:
                    failure = .unavailable(status: http.statusCode, message: Self.text(data), attempts: attempt)
                    retryAfter = http.value(forHTTPHeaderField: "Retry-After").flatMap { Int($0) }.map { .seconds(max(0, $0)) }
                case 300...399:
                    // Never followed: the token would go wherever the hub points.
                    let target = http.value(forHTTPHeaderField: "Location") ?? "nowhere"
                    throw HubTransportError.invalidAnswer("the hub redirected (HTTP \(http.statusCode)) to \(target); redirects are not followed, so the token is sent nowhere else: use the final URL")
                case 400...499:
                    throw HubTransportError.refused(status: http.statusCode, message: Self.text(data))
                default:
                    throw HubTransportError.invalidAnswer("HTTP \(http.statusCode) where 200 was expected")
                }
            } catch let error as HubTransportError {
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch HubHTTPSession.Failure.tooLarge(let bytes) {
                throw HubTransportError.invalidAnswer("\(bytes) bytes or more, more than the \(Self.maximumAnswerBytes) a hub sends; not read")
            } catch let error as URLError where [.unsupportedURL, .badURL].contains(error.code) {
                // Not a network failure: retrying cannot help.
                throw HubTransportError.invalidAnswer("the URL \(request.url?.absoluteString ?? "") cannot be used (\(error.localizedDescription)); for an IPv6 address, use a host name")
            } catch {
                failure = .unreachable(error.localizedDescription, attempts: attempt)
            }
            guard attempt < retry.maximumAttempts else { throw failure }
            try await sleep(retry.delay(beforeRetry: attempt, randomFraction: randomFraction(), retryAfter: retryAfter))
            attempt += 1
        }
    }

    /// The text of a refusal, shortened for an error message.
    private static func text(_ data: Data) -> String {
        String(decoding: data.prefix(512), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
