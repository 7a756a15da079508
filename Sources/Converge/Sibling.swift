/// One write that is still current for its key: its dot, its hybrid timestamp and its
/// value, or `nil` for a removal (a tombstone).
///
/// A key has several siblings when writes to it were concurrent and nobody has yet
/// overwritten them all.
public struct Sibling: Hashable, Sendable, CustomStringConvertible {
    /// The identity of the write.
    public var dot: Dot
    /// When the writer made it, by its hybrid logical clock.
    public var timestamp: HybridTimestamp
    /// The value written, or `nil` if the write removed the key.
    public var value: Value?

    /// Creates a sibling: the write `dot`, stamped `timestamp`, of `value` (`nil` for a removal).
    public init(dot: Dot, timestamp: HybridTimestamp, value: Value?) {
        self.dot = dot
        self.timestamp = timestamp
        self.value = value
    }

    /// Whether this write removed the key.
    public var isTombstone: Bool { value == nil }

    /// The bytes this sibling's value counts against a quota (0 for a tombstone).
    public var valueSizeBytes: Int { value?.encodedSize ?? 0 }

    public var description: String {
        "\(dot)@\(timestamp)=\(value.map(\.description) ?? "⊥")"
    }
}
