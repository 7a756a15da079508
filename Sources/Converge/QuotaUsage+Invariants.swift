extension QuotaUsage {
    /// The first broken invariant, described, or `nil` if all hold: counts are not
    /// negative, and there are at least as many value bytes as keys (every live value
    /// encodes to at least one byte).
    package func _invariantViolation() -> String? {
        if keyCount < 0 { return "negative key count \(keyCount)" }
        if valueBytes < keyCount { return "\(valueBytes) value bytes for \(keyCount) live keys" }
        return nil
    }
}
