/// The replicated state of one store: an observed-remove map of multi-value registers
/// with a causal context (an "optimized OR-map" in the delta-CRDT literature).
///
/// `entries[k]` holds the siblings of key `k`: the causally concurrent writes that no
/// replica has yet overwritten, in canonical (dot) order. `context` is the version vector
/// of every write incorporated. The rules below are what makes replicas converge:
///
/// - A local write replaces every sibling of the key with one new sibling, because the
///   writer has seen them all.
/// - ``join(_:keys:)`` keeps a sibling of either side if the other side also has it or has not
///   seen its dot; the contexts are joined pointwise.
/// - ``delta(for:)`` sends every key with a sibling the peer has not seen, with its whole
///   sibling set, and the whole context; ``apply(_:partialKeys:)`` joins key by key.
///
/// The map is I/O-free and deterministic. Merge policies are read views over the siblings
/// (``MergePolicy``); the map itself never discards a concurrent write.
public struct ReplicatedMap: Hashable, Sendable {
    // Settable in the module only, so that its code (and tests, which break a state on
    // purpose to show `_checkInvariants()` catches it) can reach them.

    /// The siblings of every key that has at least one, each array in dot order.
    ///
    /// Setting it (tests break a state on purpose this way) rebuilds the dot index; the
    /// map's own operations change `_entries` and index what they add.
    public internal(set) var entries: [String: [Sibling]] {
        get { _entries }
        set {
            _entries = newValue
            _siblingCount = newValue.values.reduce(0) { $0 + $1.count }
            _dotIndex = _DotIndex(newValue)
            _tombstoneKeys = Self.tombstoneKeys(of: newValue)
        }
    }
    /// Every write incorporated in this state.
    public internal(set) var context: VersionVector
    /// What the live (non-tombstone) siblings count against a quota.
    public internal(set) var usage: QuotaUsage

    var _entries: [String: [Sibling]]
    /// How many siblings `_entries` holds, to know when the index holds too many stale entries.
    var _siblingCount: Int
    /// Every write's key by replica and counter, for ``delta(for:)``; derived from `_entries`
    /// and not part of the map's value (``==`` and hashing ignore it).
    var _dotIndex: _DotIndex
    /// The keys whose siblings are all tombstones: the only ones
    /// ``collectTombstones(stableFrontier:)`` may drop, so that collecting walks them instead
    /// of every key. Derived from `_entries`, like the dot index.
    var _tombstoneKeys: Set<String>

    /// The empty state.
    public init() {
        _entries = [:]
        _siblingCount = 0
        _dotIndex = _DotIndex()
        _tombstoneKeys = []
        context = VersionVector()
        usage = QuotaUsage()
    }

    /// Creates a state from its parts, checking the invariants (used by decoders).
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` if a sibling list is empty or out of
    ///   order, or a sibling's dot is not covered by `context`.
    public init(entries: [String: [Sibling]], context: VersionVector) throws(ConvergeError) {
        try Self.validate(entries: entries, context: context)
        _entries = entries
        _siblingCount = 0
        _dotIndex = _DotIndex(entries)
        _tombstoneKeys = Self.tombstoneKeys(of: entries)
        self.context = context
        usage = QuotaUsage()
        for siblings in entries.values {
            usage.add(siblings)
            _siblingCount += siblings.count
        }
    }

    public static func == (lhs: ReplicatedMap, rhs: ReplicatedMap) -> Bool {
        lhs._entries == rhs._entries && lhs.context == rhs.context && lhs.usage == rhs.usage
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(_entries)
        hasher.combine(context)
        hasher.combine(usage)
    }

    /// Checks that `entries` could be the entries of a state with `context` (or of a delta
    /// sent with it): keys not empty, sibling lists not empty and in dot order, every dot
    /// covered by `context`.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` naming the first problem in key order.
    /// - Complexity: O(*n*) in the number of siblings.
    static func validate(entries: [String: [Sibling]], context: VersionVector) throws(ConvergeError) {
        func check(_ key: String, _ siblings: [Sibling]) throws(ConvergeError) {
            guard !key.isEmpty else { throw .malformed(.invalidEntry, "empty key") }
            guard !siblings.isEmpty else { throw .malformed(.invalidEntry, "key \"\(key)\" has no siblings") }
            for index in siblings.indices {
                if index > 0, !(siblings[index - 1].dot < siblings[index].dot) {
                    throw .malformed(.nonCanonical, "siblings of \"\(key)\" are not in strictly increasing dot order")
                }
                guard context.contains(siblings[index].dot) else {
                    throw .malformed(.notCovered, "sibling \(siblings[index].dot) of \"\(key)\" is not covered by the context \(context)")
                }
            }
        }
        do {
            for (key, siblings) in entries { try check(key, siblings) }
        } catch {
            // Report the first problem in key order, never in Dictionary order, so the
            // message is the same in every process.
            for key in entries.keys.sortedByUTF8() { try check(key, entries[key]!) }
        }
    }

    /// The siblings of `key`, in canonical order; empty if the key has none.
    public func siblings(forKey key: String) -> [Sibling] {
        entries[key] ?? []
    }

    /// The keys with at least one live (non-tombstone) sibling, in UTF-8 byte order.
    public var liveKeys: [String] {
        entries.compactMap { key, siblings in siblings.contains { !$0.isTombstone } ? key : nil }
            .sortedByUTF8()
    }

    /// The value a read of `key` returns under `policy`, or `nil` if the key is absent.
    ///
    /// A key whose siblings are all tombstones is absent; the policy is consulted only
    /// when siblings disagree.
    public func visibleValue(forKey key: String, policy: MergePolicy) -> Value? {
        guard let siblings = entries[key] else { return nil }
        return Self.visibleValue(of: siblings, policy: policy)
    }

    /// Whether a read under `policy` returns different values for `before` and `after`,
    /// two sets of siblings of one key; a value kept encoded is decoded only when several
    /// siblings leave the answer to the policy (a removal may win over a live sibling, so
    /// nothing short of the policy can say what a read shows then).
    static func visibleValuesDiffer(_ before: [Sibling], _ after: [Sibling], policy: MergePolicy) -> Bool {
        if before == after { return false }
        if before.count == 1, after.count == 1 { return !before[0].holdsTheSameValue(as: after[0]) }
        return visibleValue(of: before, policy: policy) != visibleValue(of: after, policy: policy)
    }

    static func visibleValue(of siblings: [Sibling], policy: MergePolicy) -> Value? {
        if siblings.count == 1 { return siblings[0].value }
        guard siblings.contains(where: { !$0.isTombstone }) else { return nil }
        return policy.resolve(siblings)
    }

    // MARK: Local operations

    /// Writes `value` (or removes the key, for `nil`) as a new write of `replica`.
    ///
    /// Removing a key that has no live sibling is a no-op that creates no dot. Limits
    /// (quotas, value validity) are the caller's to check before; see ``Quota``.
    ///
    /// - Returns: The dot of the new write, or `nil` for a no-op removal.
    /// - Complexity: O(*s* + *v*), where *s* is the number of siblings the write replaces
    ///   and *v* the size of the values involved.
    @discardableResult
    public mutating func write(_ value: Value?, forKey key: String, replica: ReplicaID, timestamp: HybridTimestamp) -> Dot? {
        guard let sibling = plannedWrite(value, forKey: key, replica: replica, timestamp: timestamp) else { return nil }
        commitWrite(sibling, forKey: key)
        _checkInvariants()
        return sibling.dot
    }

    /// The sibling ``write(_:forKey:replica:timestamp:)`` would create, without changing
    /// anything: `nil` for a no-op removal. A store saves it durably, then commits it.
    func plannedWrite(_ value: Value?, forKey key: String, replica: ReplicaID, timestamp: HybridTimestamp) -> Sibling? {
        plannedWrite(value, forKey: key, replacing: siblings(forKey: key), replica: replica, timestamp: timestamp)
    }

    /// ``plannedWrite(_:forKey:replica:timestamp:)`` given the key's siblings, which the
    /// caller looked up already (a store checks them against its quota first).
    func plannedWrite(_ value: Value?, forKey key: String, replacing current: [Sibling], replica: ReplicaID,
                      timestamp: HybridTimestamp) -> Sibling? {
        precondition(!key.isEmpty, "keys must not be empty")
        if value == nil, current.allSatisfy(\.isTombstone) { return nil }
        return Sibling(dot: Dot(replica: replica, counter: context[replica] + 1), timestamp: timestamp, value: value)
    }

    /// Applies a sibling from ``plannedWrite(_:forKey:replica:timestamp:)``: it replaces
    /// every sibling of the key. It does not check invariants, so that a caller in the
    /// middle of a multi-step change (a batch, a hub applying a delta key by key) can use
    /// it; the caller checks once at the end.
    mutating func commitWrite(_ sibling: Sibling, forKey key: String) {
        context.advance(sibling.dot)
        replaceSiblings(forKey: key, with: [sibling])
    }

    /// Replaces every sibling of `key` with copies of `siblings`, each re-issued as a new
    /// write of `replica` that keeps the original's timestamp and value: the hub's way to
    /// restore a key's previous siblings exactly as they were (several under multi-value)
    /// while superseding everything the key holds now. Like ``commitWrite(_:forKey:)``,
    /// it does not check invariants.
    ///
    /// - Returns: The re-issued siblings, in dot order.
    mutating func reissue(_ siblings: [Sibling], forKey key: String, replica: ReplicaID) -> [Sibling] {
        var reissued: [Sibling] = []
        for sibling in siblings {
            let dot = Dot(replica: replica, counter: context[replica] + 1)
            context.advance(dot)
            reissued.append(sibling.restamped(dot))
        }
        replaceSiblings(forKey: key, with: reissued)
        return reissued
    }

    // MARK: Merging

    /// Merges another replica's whole state into this one.
    ///
    /// Commutative, associative and idempotent.
    ///
    /// - Parameters:
    ///   - other: The state of another replica, or a page of it (see
    ///     ``fullStatePage(after:within:maximumBytes:)``).
    ///   - span: The keys `other` answers for: only these are touched (its entries must lie
    ///     in it). Every key by default.
    /// - Returns: The keys whose sibling sets changed, in UTF-8 byte order.
    /// - Complexity: O(*k* · *s*), where *k* is the number of keys of both states and *s*
    ///   the number of siblings per key.
    @discardableResult
    public mutating func join(_ other: ReplicatedMap, keys span: KeySpan = .all) -> [String] {
        var changed: [String] = []
        // Where the other side has no sibling, ours survive unless it has seen them.
        var pruned: [(key: String, kept: [Sibling])] = []
        for (key, ours) in entries where other.entries[key] == nil && (span == .all || span.contains(key)) {
            let kept = ours.filter { !other.context.contains($0.dot) }
            if kept.count != ours.count { pruned.append((key, kept)) }
        }
        for (key, kept) in pruned {
            replaceSiblings(forKey: key, with: kept)
            changed.append(key)
        }
        for (key, theirs) in other.entries where span == .all || span.contains(key) {
            if mergeSiblings(forKey: key, theirs: theirs, theirContext: other.context) { changed.append(key) }
        }
        context.formUnion(other.context)
        _checkInvariants()
        return changed.sortedByUTF8()
    }

    /// The changes a peer whose state incorporates `peerContext` lacks.
    ///
    /// `peerContext` must be a version vector the peer actually reported (or an older
    /// one): a guessed, higher vector can make the delta omit writes the peer needs.
    ///
    /// It looks only at the replicas this state's context names above `peerContext`, which
    /// finds every write the peer lacks because the context covers every sibling (an
    /// invariant of the map).
    ///
    /// - Returns: Every key with a sibling not covered by `peerContext`, with all its
    ///   siblings, and this state's whole context.
    /// - Complexity: O(*r* + *a* log *n* + *w*), where *r* is the number of replicas in
    ///   this state's context and `peerContext`, *a* the number of replicas this state
    ///   holds more writes of, *n* the number of siblings and *w* the number of writes not
    ///   covered by `peerContext` (superseded ones included, up to about *n*).
    public func delta(for peerContext: VersionVector) -> Delta {
        var changed: [String: [Sibling]] = [:]
        // The index may name writes that are gone (see `_DotIndex`): a key is taken only if
        // it still holds the write, which is exactly when the scan's test would take it.
        _dotIndex.forEachWrite(notCoveredBy: peerContext, holding: context) { dot, key in
            guard changed[key] == nil, let siblings = _entries[key], siblings.contains(where: { $0.dot == dot }) else { return }
            changed[key] = siblings
        }
        return Delta(entries: changed, context: context)
    }

    /// Joins a delta into this state, key by key.
    ///
    /// Applying `a.delta(for: b.context)` to `b` gives the same state as `b.join(a)`.
    /// Deltas are idempotent and may arrive in any order or more than once.
    ///
    /// - Returns: The keys whose sibling sets changed, in UTF-8 byte order.
    /// - Complexity: O(*k* · *s*) in the keys and siblings of the delta.
    /// - Parameters:
    ///   - delta: Another replica's changes (``delta(for:)``, or a page of them).
    ///   - partialKeys: Keys of a page whose entries leave out siblings beyond the page's
    ///     context (see ``delta(for:maximumBytes:)``): joined without dropping any sibling
    ///     of this state, which the left-out ones may or may not supersede.
    @discardableResult
    public mutating func apply(_ delta: Delta, partialKeys: Set<String> = []) -> [String] {
        var changed: [String] = []
        for (key, theirs) in delta.entries {
            let context = partialKeys.contains(key) ? VersionVector() : delta.context
            if mergeSiblings(forKey: key, theirs: theirs, theirContext: context) { changed.append(key) }
        }
        context.formUnion(delta.context)
        _checkInvariants()
        return changed.sortedByUTF8()
    }

    /// What ``apply(_:partialKeys:)`` would change, without changing this state (so without
    /// copying it): the new sibling lists of the keys it changes (empty for a key it
    /// removes), those keys in UTF-8 byte order, and the context's counters it raises. A
    /// store plans a merge with it, commits the change, then puts it in place with
    /// ``replaceEntries(_:settingCounters:)``.
    ///
    /// - Complexity: O((*k* · *s* + *r*) log *R*) in the keys and siblings of the delta, the
    ///   replicas *r* of its context and *R* of this state's, whatever the number of keys
    ///   this state holds.
    func plannedApply(_ delta: Delta, partialKeys: Set<String> = []) -> (entries: [String: [Sibling]], changedKeys: [String], contextCounters: [ReplicaID: UInt64]) {
        var changed: [String: [Sibling]] = [:]
        for (key, theirs) in delta.entries {
            // The same join as `mergeSiblings`, against this state's context, which `apply`
            // raises only after its last key.
            let merge = Self.merge(_entries[key] ?? [], context, theirs, partialKeys.contains(key) ? VersionVector() : delta.context)
            if merge.changed { changed[key] = merge.siblings }
        }
        return (changed, changed.keys.sortedByUTF8(), context.raises(toward: delta.context))
    }

    /// Joins one key of a delta without taking the delta's context yet; the caller must
    /// call ``formContextUnion(_:)`` with the same context after its last key. Used by a
    /// hub that checks the quota key by key. In between, the state may hold siblings its
    /// context does not cover yet, so invariants are checked only by the last step.
    ///
    /// - Returns: Whether the key's siblings changed.
    @discardableResult
    mutating func applyEntry(forKey key: String, siblings theirs: [Sibling], senderContext: VersionVector) -> Bool {
        mergeSiblings(forKey: key, theirs: theirs, theirContext: senderContext)
    }

    /// Joins `other` into this state's context (the last step of applying a delta).
    mutating func formContextUnion(_ other: VersionVector) {
        context.formUnion(other)
        _checkInvariants()
    }

    /// Joins one key's siblings with another replica's; returns whether they changed.
    ///
    /// Usage is updated by what the merge dropped and added, so a key with many siblings
    /// costs one pass (this is what keeps 1,540 concurrent writers fast).
    private mutating func mergeSiblings(forKey key: String, theirs: [Sibling], theirContext: VersionVector) -> Bool {
        let ours = _entries[key] ?? []
        let merge = Self.merge(ours, context, theirs, theirContext)
        guard merge.changed else { return false }
        let wasLive = ours.contains { !$0.isTombstone }, isLive = merge.siblings.contains { !$0.isTombstone }
        usage.valueBytes += merge.addedBytes - merge.removedBytes
        usage.keyCount += (isLive ? 1 : 0) - (wasLive ? 1 : 0)
        _entries[key] = merge.siblings.isEmpty ? nil : merge.siblings
        reindex(forKey: key, old: ours, new: merge.siblings)
        return true
    }

    /// The join of two sibling lists, both in dot order, given each side's context.
    static func mergedSiblings(_ ours: [Sibling], _ ourContext: VersionVector, _ theirs: [Sibling], _ theirContext: VersionVector) -> [Sibling] {
        merge(ours, ourContext, theirs, theirContext).siblings
    }

    /// The join of two sibling lists, with whether it differs from `ours` and the value
    /// bytes of the live siblings it dropped from `ours` and added from `theirs`.
    static func merge(_ ours: [Sibling], _ ourContext: VersionVector, _ theirs: [Sibling], _ theirContext: VersionVector)
        -> (siblings: [Sibling], changed: Bool, addedBytes: Int, removedBytes: Int) {
        var merged: [Sibling] = []
        merged.reserveCapacity(max(ours.count, theirs.count))
        var (changed, addedBytes, removedBytes) = (false, 0, 0)
        var i = 0
        var j = 0
        while i < ours.count || j < theirs.count {
            if j == theirs.count || (i < ours.count && ours[i].dot < theirs[j].dot) {
                if !theirContext.contains(ours[i].dot) {
                    merged.append(ours[i])
                } else {
                    changed = true
                    removedBytes += ours[i].valueSizeBytes
                }
                i += 1
            } else if i == ours.count || theirs[j].dot < ours[i].dot {
                if !ourContext.contains(theirs[j].dot) {
                    merged.append(theirs[j])
                    changed = true
                    addedBytes += theirs[j].valueSizeBytes
                }
                j += 1
            } else {
                merged.append(ours[i])  // the same write on both sides
                i += 1
                j += 1
            }
        }
        return (merged, changed, addedBytes, removedBytes)
    }

    /// Overwrites the given keys' sibling lists (empty deletes) and the given counters of
    /// the context (see ``VersionVector/setCounters(_:)``), or the whole context if
    /// `wholeContext`, as a storage records a change. The caller guarantees the invariants hold.
    ///
    /// - Complexity: O(*k* + *c* log *r*) in the keys and counters given and the replicas of
    ///   the context, in place.
    mutating func replaceEntries(_ changed: [String: [Sibling]], settingCounters counters: [ReplicaID: UInt64], wholeContext: Bool = false) {
        for (key, siblings) in changed { replaceSiblings(forKey: key, with: siblings) }
        if wholeContext { context = VersionVector(counters) } else { context.setCounters(counters) }
        _checkInvariants()
    }

    /// ``replaceEntries(_:settingCounters:wholeContext:)`` for one key and one counter (a
    /// store putting in place a write of one key): no dictionary to build or walk.
    mutating func replaceSiblings(forKey key: String, with siblings: [Sibling], settingCounter counter: UInt64, of replica: ReplicaID) {
        replaceSiblings(forKey: key, with: siblings)
        context.set(replica, to: counter)
        _checkInvariants()
    }

    /// Replaces the siblings of `key` with `new` (an empty list removes the key), finding
    /// the old ones in the same lookup that stores the new ones: one hash of the key.
    private mutating func replaceSiblings(forKey key: String, with new: [Sibling]) {
        let old = (new.isEmpty ? _entries.removeValue(forKey: key) : _entries.updateValue(new, forKey: key)) ?? []
        usage.remove(old)
        usage.add(new)
        reindex(forKey: key, old: old, new: new)
    }

    // MARK: Tombstone collection

    /// Drops the keys whose siblings are all tombstones covered by `stableFrontier`.
    ///
    /// `stableFrontier` must be causally stable: covered by the acknowledged context of
    /// every replica in the membership, so that no replica can still hold a write those
    /// tombstones supersede. Visible values never change: such keys are absent already.
    ///
    /// - Returns: How many tombstones were dropped.
    /// - Complexity: O(*n*) in the number of siblings.
    @discardableResult
    public mutating func collectTombstones(stableFrontier: VersionVector) -> Int {
        let collectable = collectableKeys(stableFrontier: stableFrontier)
        var dropped = 0
        for key in collectable {
            guard let siblings = _entries.removeValue(forKey: key) else { continue }
            dropped += siblings.count
            reindex(forKey: key, old: siblings, new: [])
        }
        _checkInvariants()
        return dropped
    }

    /// The keys ``collectTombstones(stableFrontier:)`` would drop, in UTF-8 byte order.
    ///
    /// - Complexity: O(*t*) for the *t* keys that hold only tombstones, not O(*n*).
    public func collectableKeys(stableFrontier: VersionVector) -> [String] {
        _tombstoneKeys.filter { key in
            _entries[key]?.allSatisfy { $0.isTombstone && stableFrontier.contains($0.dot) } ?? false
        }.sortedByUTF8()
    }
}

extension ReplicatedMap {
    /// A fragment of a state for a peer: some keys with their whole sibling sets, and the
    /// sender's whole context.
    public struct Delta: Hashable, Sendable {
        /// The keys the peer lacks something of, each with all its siblings in dot order.
        public var entries: [String: [Sibling]]
        /// The sender's context.
        public var context: VersionVector

        /// Creates a delta from its parts. Nothing is checked here: a store refuses, when it
        /// merges, a delta whose context does not cover its siblings.
        public init(entries: [String: [Sibling]], context: VersionVector) {
            self.entries = entries
            self.context = context
        }

        /// Whether the delta carries no key (it may still advance the peer's context).
        public var isEmpty: Bool { entries.isEmpty }
    }

    /// This whole state as a delta, for a peer that has nothing.
    public var asDelta: Delta { Delta(entries: entries, context: context) }
}
