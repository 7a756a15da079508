/// What a state's live values count against a quota.
///
/// Every live sibling counts: a key with two concurrent values holds both until the app or
/// the policy resolves them, and counting them identically on every replica keeps quota
/// decisions deterministic whatever the read policy.
public struct QuotaUsage: Hashable, Sendable, CustomStringConvertible {
    /// Keys with at least one live (non-tombstone) sibling.
    public var keyCount: Int = 0
    /// The canonical encoded bytes of every live sibling's value.
    public var valueBytes: Int = 0

    /// Creates a usage figure (empty by default).
    public init(keyCount: Int = 0, valueBytes: Int = 0) {
        self.keyCount = keyCount
        self.valueBytes = valueBytes
    }

    mutating func add(_ siblings: [Sibling]) {
        var live = false
        for sibling in siblings where !sibling.isTombstone {
            live = true
            valueBytes += sibling.valueSizeBytes
        }
        if live { keyCount += 1 }
    }

    /// The usage after a key's `old` siblings are replaced by one live value of
    /// `valueBytes` bytes.
    func replacing(_ old: [Sibling], withValueOfBytes valueBytes: Int) -> QuotaUsage {
        var after = self
        after.remove(old)
        after.keyCount += 1
        after.valueBytes += valueBytes
        return after
    }

    mutating func remove(_ siblings: [Sibling]) {
        var live = false
        for sibling in siblings where !sibling.isTombstone {
            live = true
            valueBytes -= sibling.valueSizeBytes
        }
        if live { keyCount -= 1 }
    }

    public var description: String { "\(keyCount) keys, \(valueBytes) bytes" }
}
