/// Deltas and full states cut to fit a message: when a state is larger than one message
/// may be, it travels in several, and each is a valid change on its own.
///
/// A page of a delta is the sender's state restricted to a *prefix* of each writer's
/// writes: every write the receiver lacks up to a per-writer counter, and a context that
/// stops at those counters. Joined, it is the join with a state the sender passed through,
/// so the receiver never claims (and never acknowledges) a write it has not received, and
/// the next delta, computed for the receiver's new context, carries the rest.
///
/// A page of a full state answers for a ``KeySpan`` of keys only, under a context the
/// receiver already covers: it adds nothing the receiver has not seen, and drops, in its
/// span, every sibling the sender has seen and no longer has.
extension ReplicatedMap {
    /// At most the bytes one key's entry takes in an encoded delta, replica positions
    /// counted at their widest.
    static func entryBytesBound(key: String, siblings: [Sibling]) -> Int {
        let keyBytes = key.utf8.count
        var size = BinaryWriter.varintSize(UInt64(keyBytes)) + keyBytes + BinaryWriter.varintSize(UInt64(siblings.count))
        // Position (at most 4,096 replicas: 2 bytes, 3 to be safe), counter, timestamp (wall
        // and logical varints: at most 15 bytes), the value flag, the value.
        for sibling in siblings {
            size += 3 + BinaryWriter.varintSize(sibling.dot.counter) + 15 + 1 + sibling.valueSizeBytes
        }
        return size
    }

    /// At most the bytes a delta of `entries` under `context` encodes to.
    static func deltaBytesBound(entries: [String: [Sibling]], context: VersionVector) -> Int {
        var size = context.encodedSize + BinaryWriter.varintSize(UInt64(entries.count))
        for (key, siblings) in entries { size += entryBytesBound(key: key, siblings: siblings) }
        return size
    }

    /// The changes a peer whose state incorporates `peerContext` lacks, cut to encode to
    /// at most `maximumBytes`: ``delta(for:)`` when it fits, else a page.
    ///
    /// A page takes the writes the peer lacks in order of their counters, while they fit,
    /// and stops each writer at the first of its writes that does not: its context is
    /// this state's, lowered for each stopped writer to just below that write. Its entries
    /// are the keys with a write the peer lacks under that context, each with all its
    /// siblings the context covers. At least one key is always taken, so that repeated
    /// pages make progress; a single key's entry larger than `maximumBytes` makes a page
    /// larger than asked.
    ///
    /// A key of the page whose siblings are not all under the page's context is *partial*:
    /// a sibling the page covers but leaves out may have been superseded by one beyond it,
    /// so the receiver joins a partial key without dropping anything of its own (see
    /// ``apply(_:partialKeys:)``); such a key always comes again, whole, in a later delta.
    ///
    /// - Returns: The delta, whether it is all of ``delta(for:)``, and its partial keys in
    ///   UTF-8 order.
    /// - Complexity: O(*n* log *n*) in the siblings the peer lacks, O(*n*) when it all fits.
    public func delta(for peerContext: VersionVector, maximumBytes: Int) -> (delta: Delta, complete: Bool, partialKeys: [String]) {
        let whole = delta(for: peerContext)
        if Self.deltaBytesBound(entries: whole.entries, context: context) <= maximumBytes { return (whole, true, []) }
        // The writes the peer lacks, by counter, then writer: each writer's in its own order.
        var lacking: [(dot: Dot, key: String)] = []
        for (key, siblings) in whole.entries {
            for sibling in siblings where !peerContext.contains(sibling.dot) { lacking.append((sibling.dot, key)) }
        }
        lacking.sort { ($0.dot.counter, $0.dot.replica) < ($1.dot.counter, $1.dot.replica) }
        var used = context.encodedSize + 5
        var taken: Set<String> = []
        var stoppedAt: [ReplicaID: UInt64] = [:]
        for (dot, key) in lacking where stoppedAt[dot.replica] == nil {
            if taken.contains(key) { continue }
            // A key costs all its siblings, the first time (a later write of it comes free).
            let cost = Self.entryBytesBound(key: key, siblings: whole.entries[key]!)
            if used + cost > maximumBytes && !taken.isEmpty {
                stoppedAt[dot.replica] = dot.counter
                continue
            }
            taken.insert(key)
            used += cost
        }
        var pageContext = VersionVector()
        for (replica, counter) in context.entries {
            let last = stoppedAt[replica].map { $0 - 1 } ?? counter
            if last > 0 { pageContext.raise(replica, to: last) }
        }
        var entries: [String: [Sibling]] = [:]
        var partialKeys: [String] = []
        for key in taken {
            let siblings = whole.entries[key]!
            let covered = siblings.filter { pageContext.contains($0.dot) }
            // A key none of whose siblings is under the page's context is not in the page
            // at all (it comes whole in a later one); only a key the page holds is partial.
            guard !covered.isEmpty else { continue }
            entries[key] = covered
            if covered.count < siblings.count { partialKeys.append(key) }
        }
        return (Delta(entries: entries, context: pageContext), false, partialKeys.sortedByUTF8())
    }

    /// A page of this whole state for a peer whose context covers `within`: the keys
    /// after `after`, in UTF-8 order, while they fit in `maximumBytes` (at least one),
    /// each with its siblings `within` covers, under the context `within ∧ context`.
    ///
    /// - Returns: The page and the span it answers for (up to the last key taken, or to
    ///   the end when every remaining key fits).
    /// - Complexity: O(*k* log *k*) in the keys.
    public func fullStatePage(after: String?, within: VersionVector, maximumBytes: Int) -> (delta: Delta, keys: KeySpan) {
        let pageContext = context.intersection(within)
        var used = pageContext.encodedSize + 5
        var entries: [String: [Sibling]] = [:]
        var last: String?
        let keys = keys(after: after)
        for (index, key) in keys.enumerated() {
            let covered = self.entries[key]!.filter { pageContext.contains($0.dot) }
            let cost = Self.entryBytesBound(key: key, siblings: covered)
            if used + cost > maximumBytes && index > 0 {
                return (Delta(entries: entries, context: pageContext), KeySpan(after: after, through: last))
            }
            if !covered.isEmpty { entries[key] = covered }
            used += cost
            last = key
        }
        return (Delta(entries: entries, context: pageContext), KeySpan(after: after, through: nil))
    }

    /// The keys after `after` (all if `nil`), in UTF-8 order.
    private func keys(after: String?) -> [String] {
        let span = KeySpan(after: after, through: nil)
        return entries.keys.filter { span.contains($0) }.sortedByUTF8()
    }
}
