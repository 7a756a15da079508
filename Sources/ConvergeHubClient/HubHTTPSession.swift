import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The one `URLSession` every ``HubHTTPTransport`` of the process uses, driven through its
/// delegate so that the transport decides what the system's defaults would decide
/// otherwise:
///
/// - redirects are never followed (a hub that answers `3xx` would otherwise have the
///   bearer token sent to wherever it points);
/// - an answer larger than the limit is cut off as it arrives (by its `Content-Length`,
///   or as its bytes come), never downloaded whole first.
final class HubHTTPSession: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: the only mutable state is `exchanges`, behind its mutex; `session` is
    // set once, in `init`, before the object is shared.

    /// The process's session.
    static let shared = HubHTTPSession()

    /// Why an exchange ended without an answer to return.
    enum Failure: Error {
        /// The answer was larger than the limit (`bytes` counted so far or announced).
        case tooLarge(bytes: Int64)
    }

    /// An exchange in flight: the caller waiting for it, and what arrived.
    private struct Exchange {
        var continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>
        var limit: Int
        var response: HTTPURLResponse?
        var data = Data()
        var failure: (any Error)?
    }

    private let exchanges = Mutex<[Int: Exchange]>([:])
    private var session: URLSession!
    /// The queue the session's delegate callbacks run on (an `OperationQueue` holds its
    /// underlying queue unowned: this keeps it).
    private let callbackQueue = DispatchQueue(label: "converge.hub-http.callbacks")

    private override init() {
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // The delegate's callbacks run on a serial queue of their own, which (as every serial
        // queue) targets the overcommitting root queue: it gets a thread even when the shared
        // pool's are all blocked (an app's work, or the cooperative pool's). On the default
        // delegate queue they could wait past the request's timeout, and FoundationNetworking
        // on Linux traps when a redirect's completion handler is called after the timeout
        // ended the task (this narrows that race; it cannot remove it).
        let callbacks = OperationQueue()
        callbacks.name = "Converge hub HTTP callbacks"
        callbacks.maxConcurrentOperationCount = 1
        callbacks.underlyingQueue = callbackQueue
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: callbacks)
    }

    /// Sends `request` (with `body`, if any) and returns the answer, at most `limit` bytes.
    ///
    /// - Throws: The system's error if no answer arrived, ``Failure/tooLarge(bytes:)``, or
    ///   `CancellationError` if the calling task is cancelled.
    func send(_ request: URLRequest, body: Data?, limit: Int) async throws -> (Data, HTTPURLResponse) {
        let task = body.map { session.uploadTask(with: request, from: $0) } ?? session.dataTask(with: request)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                exchanges.withLock { $0[task.taskIdentifier] = Exchange(continuation: continuation, limit: limit) }
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
    }

    // MARK: URLSessionDataDelegate

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)   // not followed: the redirect itself is the answer
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        let allowed = exchanges.withLock { exchanges -> Bool in
            guard var exchange = exchanges[dataTask.taskIdentifier] else { return false }
            exchange.response = response as? HTTPURLResponse
            if response.expectedContentLength > Int64(exchange.limit) {
                exchange.failure = Failure.tooLarge(bytes: response.expectedContentLength)
            }
            exchanges[dataTask.taskIdentifier] = exchange
            return exchange.failure == nil
        }
        completionHandler(allowed ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let overflow = exchanges.withLock { exchanges -> Bool in
            guard var exchange = exchanges[dataTask.taskIdentifier], exchange.failure == nil else { return false }
            exchange.data.append(data)
            if exchange.data.count > exchange.limit { exchange.failure = Failure.tooLarge(bytes: Int64(exchange.data.count)) }
            exchanges[dataTask.taskIdentifier] = exchange
            return exchange.failure != nil
        }
        if overflow { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let failure = exchange.failure {
            exchange.continuation.resume(throwing: failure)
        } else if let error {
            exchange.continuation.resume(throwing: (error as? URLError)?.code == .cancelled ? CancellationError() : error)
        } else if let response = exchange.response ?? (task.response as? HTTPURLResponse) {
            exchange.continuation.resume(returning: (exchange.data, response))
        } else {
            exchange.continuation.resume(throwing: URLError(.badServerResponse))
        }
    }
}
