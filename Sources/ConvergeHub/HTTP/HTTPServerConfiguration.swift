/// How the server listens, and the bounds that protect it from slow, idle or too many clients.
public struct HTTPServerConfiguration: Sendable {
    /// Where to listen; port 0 picks a free port (the server reports the one bound).
    public var address: ListenAddress
    /// The most connections open at once; one more is answered `503` and closed at once.
    public var maximumConnections: Int
    /// How long a kept-alive connection may stay idle between requests.
    public var idleTimeoutMilliseconds: Int
    /// How long a client may take to send a whole head, from its first byte.
    public var headTimeoutMilliseconds: Int
    /// How long a client may take to send a body, on top of ``minimumBodyBytesPerSecond``.
    public var bodyTimeoutMilliseconds: Int
    /// The slowest body upload allowed: a body of *n* bytes gets *n* / this many seconds
    /// more (slow links send large pushes; a trickle does not hold a connection forever).
    public var minimumBodyBytesPerSecond: Int
    /// How long writing a response may take.
    public var writeTimeoutMilliseconds: Int
    /// The bounds on each request.
    public var limits: HTTPLimits
    /// The stack of each connection's thread (decoding nested values recurses).
    public var threadStackBytes: Int

    /// A configuration; every limit and timeout has a default fit for a hub.
    public init(address: ListenAddress, maximumConnections: Int = 512, idleTimeoutMilliseconds: Int = 60_000,
                headTimeoutMilliseconds: Int = 10_000, bodyTimeoutMilliseconds: Int = 30_000,
                minimumBodyBytesPerSecond: Int = 64 * 1024, writeTimeoutMilliseconds: Int = 30_000,
                limits: HTTPLimits = HTTPLimits(), threadStackBytes: Int = 4 << 20) {
        self.address = address
        self.maximumConnections = maximumConnections
        self.idleTimeoutMilliseconds = idleTimeoutMilliseconds
        self.headTimeoutMilliseconds = headTimeoutMilliseconds
        self.bodyTimeoutMilliseconds = bodyTimeoutMilliseconds
        self.minimumBodyBytesPerSecond = minimumBodyBytesPerSecond
        self.writeTimeoutMilliseconds = writeTimeoutMilliseconds
        self.limits = limits
        self.threadStackBytes = threadStackBytes
    }
}
