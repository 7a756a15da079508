/// Limits on what a store may hold, checked on every local write.
///
/// Sizes are measured on the canonical encoding of values (``Value/encodedSize``) and on
/// the UTF-8 bytes of keys, identically on every replica. A write that would break a limit
/// is refused and changes nothing. A store that went over its quota through a merge (the
/// soft quota of a mesh) refuses every write that grows its key count or its value bytes
/// until it is back under; a write that does not grow usage is always admitted, so it can
/// always shrink back.
public struct Quota: Hashable, Sendable, CustomStringConvertible {
    /// The most keys with a live value.
    public var maximumKeyCount: Int
    /// The most bytes of values in total.
    public var maximumTotalValueBytes: Int
    /// The most bytes of one value.
    public var maximumValueBytes: Int
    /// The most UTF-8 bytes of one key.
    public var maximumKeyBytes: Int

    /// Creates a quota; limits must not be negative, and keys need at least one byte.
    public init(maximumKeyCount: Int, maximumTotalValueBytes: Int, maximumValueBytes: Int, maximumKeyBytes: Int) {
        precondition(maximumKeyCount >= 0 && maximumTotalValueBytes >= 0 && maximumValueBytes >= 0 && maximumKeyBytes >= 1,
                     "quota limits must not be negative, and keys need at least one byte")
        self.maximumKeyCount = maximumKeyCount
        self.maximumTotalValueBytes = maximumTotalValueBytes
        self.maximumValueBytes = maximumValueBytes
        self.maximumKeyBytes = maximumKeyBytes
    }

    /// iCloud's key-value store limits, from Apple's documentation: 1,024 keys,
    /// 1,048,576 bytes of values in all and per value, keys of at most 64 UTF-8 bytes.
    public static let iCloud = Quota(maximumKeyCount: 1_024, maximumTotalValueBytes: 1_048_576,
                                     maximumValueBytes: 1_048_576, maximumKeyBytes: 64)

    /// No limit beyond ``Value/maximumEncodedBytes`` per value.
    public static let unlimited = Quota(maximumKeyCount: .max, maximumTotalValueBytes: .max,
                                        maximumValueBytes: Value.maximumEncodedBytes, maximumKeyBytes: .max)

    /// Whether `usage` is within the key-count and total-size limits.
    public func admits(_ usage: QuotaUsage) -> Bool {
        usage.keyCount <= maximumKeyCount && usage.valueBytes <= maximumTotalValueBytes
    }

    /// Checks that writing `value` (or removing, for `nil`) at `key` in `state` keeps
    /// within this quota.
    ///
    /// - Throws: ``ConvergeError/emptyKey``, ``ConvergeError/invalidValue(_:)``, or
    ///   ``ConvergeError/quotaExceeded(_:)`` naming the first limit broken.
    /// - Complexity: O(*v*) in the size of the values involved.
    public func check(writing value: Value?, forKey key: String, in state: ReplicatedMap) throws(ConvergeError) {
        try check(writing: value, forKey: key, usage: state.usage, siblings: state.siblings(forKey: key))
    }

    /// ``check(writing:forKey:in:)`` for a state known by its usage and the key's current
    /// siblings: how a batch checks each write against the state as the batch has left it,
    /// without building that state.
    func check(writing value: Value?, forKey key: String, usage before: QuotaUsage, siblings: [Sibling]) throws(ConvergeError) {
        guard !key.isEmpty else { throw .emptyKey }
        guard let value else { return }  // a removal only ever shrinks usage
        let keyBytes = key.utf8.count
        if keyBytes > maximumKeyBytes {
            throw .quotaExceeded(QuotaViolation(limit: .keyBytes, key: key, attempted: keyBytes, allowed: maximumKeyBytes))
        }
        try value.validate()
        let valueBytes = value.encodedSize
        if valueBytes > maximumValueBytes {
            throw .quotaExceeded(QuotaViolation(limit: .valueBytes, key: key, attempted: valueBytes, allowed: maximumValueBytes))
        }
        let after = before.replacing(siblings, withValueOfBytes: valueBytes)
        // Merges can take a store over its quota (the mesh's soft quota): then no write may
        // grow usage, on either measure, until the store is back under.
        if !admits(before) && (after.keyCount > before.keyCount || after.valueBytes > before.valueBytes) {
            let overKeys = before.keyCount > maximumKeyCount
            throw .quotaExceeded(QuotaViolation(limit: overKeys ? .keyCount : .totalValueBytes, key: key,
                                                attempted: overKeys ? after.keyCount : after.valueBytes,
                                                allowed: overKeys ? maximumKeyCount : maximumTotalValueBytes))
        }
        if after.keyCount > maximumKeyCount && after.keyCount > before.keyCount {
            throw .quotaExceeded(QuotaViolation(limit: .keyCount, key: key, attempted: after.keyCount, allowed: maximumKeyCount))
        }
        if after.valueBytes > maximumTotalValueBytes && after.valueBytes > before.valueBytes {
            throw .quotaExceeded(QuotaViolation(limit: .totalValueBytes, key: key, attempted: after.valueBytes, allowed: maximumTotalValueBytes))
        }
    }

    public var description: String {
        "\(maximumKeyCount) keys, \(maximumTotalValueBytes) bytes in all, \(maximumValueBytes) bytes per value, \(maximumKeyBytes)-byte keys"
    }
}

/// Which limit a refused write would have broken, and by how much.
public struct QuotaViolation: Hashable, Sendable, CustomStringConvertible {
    /// The quota's limits.
    public enum Limit: String, Hashable, Sendable {
        /// The number of keys with a live value (``Quota/maximumKeyCount``).
        case keyCount = "key count"
        /// The bytes of all values together (``Quota/maximumTotalValueBytes``).
        case totalValueBytes = "total value bytes"
        /// The bytes of one value (``Quota/maximumValueBytes``).
        case valueBytes = "value bytes"
        /// The UTF-8 bytes of one key (``Quota/maximumKeyBytes``).
        case keyBytes = "key bytes"
    }

    /// The limit broken.
    public var limit: Limit
    /// The key written.
    public var key: String
    /// What the write would have made the measure.
    public var attempted: Int
    /// The limit's value.
    public var allowed: Int

    /// Creates the description of a refused write.
    public init(limit: Limit, key: String, attempted: Int, allowed: Int) {
        self.limit = limit
        self.key = key
        self.attempted = attempted
        self.allowed = allowed
    }

    public var description: String {
        "writing \"\(key)\" would make the \(limit.rawValue) \(attempted), over the limit of \(allowed)"
    }
}
