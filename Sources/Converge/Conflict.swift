/// A key left with concurrent siblings by a merge, or whose local value lost to a
/// concurrent remote one.
public struct Conflict: Hashable, Sendable, CustomStringConvertible {
    /// The key in conflict.
    public var key: String
    /// All its siblings, in canonical order.
    public var siblings: [Sibling]
    /// What a read returns now, under the key's policy.
    public var winner: Value?

    /// Creates a conflict report.
    public init(key: String, siblings: [Sibling], winner: Value?) {
        self.key = key
        self.siblings = siblings
        self.winner = winner
    }

    /// The key, every sibling and the winner, on one line.
    public var description: String {
        "conflict on \"\(key)\": \(siblings.map(\.description).joined(separator: " | ")) → \(winner.map(\.description) ?? "absent")"
    }
}
