/// Decides what a read returns when a key has several concurrent siblings.
///
/// Policies are views, not merges: the state keeps every concurrent sibling, so replicas
/// converge whatever policy they read with. A policy receives at least two siblings, at
/// least one of them live, always in canonical (dot) order, so a deterministic function
/// gives the same answer on every replica. It returns the visible value, or `nil` for
/// "absent".
///
/// Policies form an open set, like swift-system's `Errno`: the built-in ones are static
/// members, and ``custom(_:_:)`` makes new ones.
public struct MergePolicy: Sendable, CustomStringConvertible {
    /// A short name for reports and the command line (`lww`, `priority`, …).
    public let name: String
    private let resolver: @Sendable ([Sibling]) -> Value?

    private init(name: String, resolver: @escaping @Sendable ([Sibling]) -> Value?) {
        self.name = name
        self.resolver = resolver
    }

    /// The visible value of `siblings` (canonical order, at least one live).
    public func resolve(_ siblings: [Sibling]) -> Value? {
        resolver(siblings)
    }

    public var description: String { name }

    /// The sibling with the greatest hybrid timestamp wins; ties go to the greater replica
    /// ID. A winning tombstone makes the key absent. This is iCloud's behaviour, and the
    /// default.
    public static let lastWriterWins = MergePolicy(name: "lww") { siblings in
        latest(siblings)?.value
    }

    /// Among concurrent values and removals, a value wins (the latest value by hybrid
    /// timestamp, if several).
    public static let addWins = MergePolicy(name: "add-wins") { siblings in
        latest(siblings.filter { !$0.isTombstone })?.value
    }

    /// A concurrent removal wins over any value; among values only, the latest wins.
    public static let removeWins = MergePolicy(name: "remove-wins") { siblings in
        if siblings.contains(where: \.isTombstone) { return nil }
        return latest(siblings)?.value
    }

    /// Reads expose every concurrent value: an array of the live siblings' values in
    /// canonical order (the value itself when only one is live). The app resolves the
    /// conflict by writing a value, which supersedes all siblings.
    public static let multiValue = MergePolicy(name: "multi-value") { siblings in
        let values = siblings.compactMap(\.value)
        return values.count == 1 ? values[0] : .array(values)
    }

    /// A fixed order of replicas decides, without clocks: the sibling written by the
    /// replica listed first wins. Replicas not listed rank after all listed ones, in
    /// replica-ID order.
    public static func replicaPriority(_ order: [ReplicaID]) -> MergePolicy {
        var rank: [ReplicaID: Int] = [:]
        for (index, replica) in order.enumerated() where rank[replica] == nil { rank[replica] = index }
        let ranks = rank
        return MergePolicy(name: "priority") { siblings in
            // Siblings are in dot order, so ties among unlisted replicas go to the smaller ID.
            siblings.min { lhs, rhs in
                let (l, r) = (ranks[lhs.dot.replica] ?? .max, ranks[rhs.dot.replica] ?? .max)
                return l != r ? l < r : lhs.dot < rhs.dot
            }?.value
        }
    }

    /// A policy computed by `resolve` from the canonically ordered siblings, for example
    /// the largest number, or the union of arrays. `resolve` must be a deterministic
    /// function of its argument, or replicas will read different values.
    public static func custom(_ name: String, _ resolve: @escaping @Sendable ([Sibling]) -> Value?) -> MergePolicy {
        MergePolicy(name: name, resolver: resolve)
    }

    /// The built-in policy with a command-line `name`, or `nil`.
    public static func named(_ name: String) -> MergePolicy? {
        switch name {
        case "lww": return .lastWriterWins
        case "add-wins": return .addWins
        case "remove-wins": return .removeWins
        case "multi-value": return .multiValue
        case "priority": return .replicaPriority([])
        default: return nil
        }
    }

    static func latest(_ siblings: [Sibling]) -> Sibling? {
        siblings.max { lhs, rhs in
            if lhs.timestamp != rhs.timestamp { return lhs.timestamp < rhs.timestamp }
            return lhs.dot < rhs.dot
        }
    }
}

/// The merge policy of every key: a default, per-prefix policies and per-key policies.
///
/// The most specific assignment wins: an exact key, then the longest matching prefix
/// (by UTF-8 bytes), then the default.
public struct MergePolicies: Sendable {
    /// The policy of keys with no more specific assignment.
    public var defaultPolicy: MergePolicy
    private var byKey: [String: MergePolicy] = [:]
    private var byPrefix: [(prefix: String, policy: MergePolicy)] = []

    /// Creates policies where every key reads with `defaultPolicy` until assigned another.
    public init(default defaultPolicy: MergePolicy = .lastWriterWins) {
        self.defaultPolicy = defaultPolicy
    }

    /// Assigns `policy` to exactly `key`.
    public mutating func setPolicy(_ policy: MergePolicy, forKey key: String) {
        byKey[key] = policy
    }

    /// Assigns `policy` to every key that starts with `prefix`.
    public mutating func setPolicy(_ policy: MergePolicy, forKeysWithPrefix prefix: String) {
        byPrefix.removeAll { $0.prefix == prefix }
        byPrefix.append((prefix, policy))
        // Longest first, so the first match is the most specific; ties cannot happen.
        byPrefix.sort { $0.prefix.utf8.count > $1.prefix.utf8.count }
    }

    /// The policy that decides reads of `key`.
    public func policy(forKey key: String) -> MergePolicy {
        if let policy = byKey[key] { return policy }
        for entry in byPrefix where key.utf8.starts(with: entry.prefix.utf8) { return entry.policy }
        return defaultPolicy
    }
}
