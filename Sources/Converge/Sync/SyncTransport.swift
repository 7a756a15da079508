/// Moves a store's sync messages to a hub and brings back the hub's answer: the one seam
/// every hub transport implements (an in-process hub, a network client, a simulated
/// network).
///
/// A transport only moves bytes. The store computes the request with its
/// ``DeviceSyncMachine`` and carries out what the machine makes of the answer, so a
/// transport never interprets a message and cannot get the protocol wrong:
///
/// ```swift
/// struct LoopbackTransport: SyncTransport {
///     let hub: InMemoryHub
///     func exchange(_ request: [UInt8]) async throws -> [UInt8] {
///         try hub.exchange(request)        // a network transport would POST the bytes
///     }
/// }
/// let store = ReplicatedKeyValueStore(replicaID: "phone", transport: LoopbackTransport(hub: hub))
/// try await store.sync()
/// ```
///
/// A transport may lose, duplicate or delay exchanges: every request is computed from
/// what the hub last reported, and every answer is idempotent, so a failed exchange is
/// repaired by the next one. Throw when no answer arrived; ``ReplicatedKeyValueStore/sync()``
/// passes the error to its caller and changes nothing.
public protocol SyncTransport: Sendable {
    /// Sends one encoded request (a push or a poll) to the hub and returns its encoded
    /// answer.
    ///
    /// - Parameter request: The bytes of one ``SyncMessage``, at most
    ///   ``SyncMessage/maximumEncodedBytes``.
    /// - Returns: The bytes of the hub's answer, unmodified.
    /// - Throws: Any error that means no answer arrived (the hub was unreachable, the
    ///   connection failed, the hub refused the request).
    func exchange(_ request: [UInt8]) async throws -> [UInt8]

    /// Exchanges without suspending, if this transport can answer at once.
    ///
    /// ``ReplicatedKeyValueStore/synchronize()`` is synchronous: it uses this to exchange
    /// before it returns (an in-process hub does), and otherwise schedules a
    /// ``ReplicatedKeyValueStore/sync()`` in the background. The default returns `nil`:
    /// implement it only if answering never waits for I/O or another task.
    ///
    /// - Returns: The hub's answer, or `nil` if this transport must suspend to answer.
    /// - Throws: What ``exchange(_:)`` would throw.
    func exchangeImmediately(_ request: [UInt8]) throws -> [UInt8]?
}

/// An error of a transport that says whether the same request may get an answer later:
/// the network or the hub may recover, or the hub refused it and will refuse it again.
/// ``ReplicatedKeyValueStore/sync()`` sends a request the hub refused as a message again at
/// once in an older format (a hub built before message format 6 refuses the newer one), and
/// nothing else: an error that does not conform counts as one that may pass, and is thrown
/// as it is.
public protocol SyncTransportFailure: Error {
    /// Whether trying again later may succeed.
    var isTransient: Bool { get }
    /// Whether the hub refused the message itself (it could not read it, or would not take
    /// it), not the credentials or the connection: a refusal an older format may avoid. By
    /// default, any failure that is not transient.
    var refusedTheMessage: Bool { get }
}

extension SyncTransportFailure {
    /// Any failure that is not transient.
    public var refusedTheMessage: Bool { !isTransient }
}

extension SyncTransport {
    /// Returns `nil`: by default a transport answers only asynchronously.
    public func exchangeImmediately(_ request: [UInt8]) throws -> [UInt8]? { nil }
}
