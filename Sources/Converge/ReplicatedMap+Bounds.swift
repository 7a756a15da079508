/// Bounds on what a replica takes from others: counters and timestamps that a peer, a hub
/// or a damaged file could push to where a later write would overflow, or drag a clock
/// into the future.
extension ReplicatedMap.Delta {
    /// Refuses counters above ``Dot/maximumCounter`` and timestamps past
    /// ``HybridTimestamp/maximumWallMilliseconds``: what decoding refuses, for a delta
    /// built in memory.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` with ``MalformedInput/Problem/outOfRange``.
    func checkBounds() throws(ConvergeError) {
        for (replica, counter) in context.entries where counter > Dot.maximumCounter {
            throw .malformed(.outOfRange, "counter \(counter) of \(replica) exceeds the maximum \(Dot.maximumCounter)")
        }
        try checkTimestamps(notAfter: HybridTimestamp.maximumWallMilliseconds, problem: .outOfRange)
    }

    /// Refuses a write whose wall time lies after `bound`.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` with `problem` (by default
    ///   ``MalformedInput/Problem/clockAhead``), naming the write and how far ahead it lies.
    package func checkTimestamps(notAfter bound: UInt64, problem: MalformedInput.Problem = .clockAhead) throws(ConvergeError) {
        var latest: (key: String, sibling: Sibling)?
        for (key, siblings) in entries {
            for sibling in siblings where sibling.timestamp.wallMilliseconds > bound {
                if latest == nil || (latest!.sibling.timestamp, latest!.sibling.dot) < (sibling.timestamp, sibling.dot) {
                    latest = (key, sibling)
                }
            }
        }
        // The latest offending write, so the error is the same whatever the iteration order.
        if let (key, sibling) = latest {
            throw .malformed(problem, "the write \(sibling.dot) of \"\(key)\" is stamped \(sibling.timestamp.wallMilliseconds) ms, "
                             + "\(sibling.timestamp.wallMilliseconds - bound) ms past the latest time accepted (\(bound) ms)")
        }
    }
}

extension UInt64 {
    /// `self + other`, or `UInt64.max` if that overflows.
    package func addingSaturating(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
