/// The keys, in UTF-8 byte order, after one key (exclusive) and up to another (inclusive):
/// the part of a hub's state one page of a full state answers for.
///
/// A full state too large for one message travels in pages, each a ``KeySpan`` of keys;
/// joined in turn, they drop every sibling the hub has seen and no longer has, as one full
/// state would.
public struct KeySpan: Hashable, Sendable, CustomStringConvertible {
    /// The key the span starts after, or `nil` to start at the first key.
    public var after: String?
    /// The last key of the span, or `nil` to run to the last key.
    public var through: String?

    /// Every key.
    public static let all = KeySpan(after: nil, through: nil)

    /// The keys after `after` (every key if `nil`) up to and including `through` (to the
    /// end if `nil`).
    public init(after: String?, through: String?) {
        self.after = after
        self.through = through
    }

    /// Whether `key` lies in the span.
    public func contains(_ key: String) -> Bool {
        if let after, !after.precedesInUTF8Order(key) { return false }
        if let through, through.precedesInUTF8Order(key) { return false }
        return true
    }

    /// Whether the span holds no key at all (it ends before it starts).
    public var isEmpty: Bool {
        guard let after, let through else { return false }
        return !after.precedesInUTF8Order(through)
    }

    public var description: String {
        "(\(after.map { "\"\($0)\"" } ?? "start"), \(through.map { "\"\($0)\"" } ?? "end")]"
    }
}
