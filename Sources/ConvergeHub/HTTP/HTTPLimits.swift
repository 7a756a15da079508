import Converge

/// Bounds on what the server reads from one request, so no client can make it allocate
/// without limit (TigerBeetle: "put a limit on everything").
public struct HTTPLimits: Hashable, Sendable {
    /// The longest request line (method, target and version), in bytes.
    public var maximumRequestLineBytes: Int
    /// The largest request head (the request line and every header line), in bytes.
    public var maximumHeadBytes: Int
    /// The most header fields in one request.
    public var maximumHeaderCount: Int
    /// The largest body, in bytes: by default the largest sync message.
    public var maximumBodyBytes: Int

    /// Creates limits; the defaults suit the hub (a body is one sync message).
    public init(maximumRequestLineBytes: Int = 8 * 1024, maximumHeadBytes: Int = 16 * 1024,
                maximumHeaderCount: Int = 64, maximumBodyBytes: Int = SyncMessage.maximumEncodedBytes) {
        self.maximumRequestLineBytes = maximumRequestLineBytes
        self.maximumHeadBytes = maximumHeadBytes
        self.maximumHeaderCount = maximumHeaderCount
        self.maximumBodyBytes = maximumBodyBytes
    }
}
