extension ReplicatedMap {
    /// Where each write a map holds lives: for every replica, the counters of its writes with
    /// the key each is a sibling of, so that ``ReplicatedMap/delta(for:)`` walks only the writes
    /// a peer lacks instead of every key.
    ///
    /// The index is *complete*, not exact: every sibling of the map has an entry, but an entry
    /// may outlive its sibling (one that a merge or a later write superseded, a collected
    /// tombstone). Removing entries would cost a search per superseded write; instead a reader
    /// checks each entry against the map, and the map rebuilds the index when stale entries
    /// outnumber live ones, which keeps it at most about twice the number of siblings. Being
    /// complete is the only property correctness rests on, and it is easy to keep: whatever
    /// adds a sibling adds its entry.
    ///
    /// The order of entries never reaches an output: a delta is a dictionary, and its encoding
    /// sorts the keys.
    struct _DotIndex: Sendable {
        /// One write: the counter of its dot and its key.
        struct Write: Sendable {
            var counter: UInt64
            var key: String
        }

        /// One replica's writes, sorted by counter: a main array, which writes in counter
        /// order extend, and a few smaller sorted levels for writes that arrived out of order
        /// (a merge of another replica's state walks keys, not counters). Out-of-order writes
        /// wait in a short unsorted list; each time it fills, it is sorted into a new level,
        /// merged with the last level while that one is no larger, so the levels halve in
        /// size and number O(log *n*); they all merge into
        /// the main array when they hold more than a quarter of it. A search then costs a
        /// binary search per level, never a walk of the writes that arrived out of order.
        struct Run: Sendable {
            /// The writes in counter order (the main array).
            private(set) var writes: [Write] = []
            /// The writes that arrived out of order: each level sorted, each smaller than the one before.
            private(set) var levels: [[Write]] = []
            /// The latest writes that arrived out of order, unsorted: at most ``pendingLimit``,
            /// then sorted into a level (so that a bulk merge does not build levels of one).
            private(set) var pending: [Write] = []
            static let pendingLimit = 32
            private var leveledCount = 0

            /// Appends `write` to the main array whatever its counter: ``sort()`` must follow.
            mutating func appendUnsorted(_ write: Write) {
                writes.append(write)
            }

            mutating func append(_ write: Write) {
                if levels.isEmpty && pending.isEmpty && (writes.last.map { $0.counter <= write.counter } ?? true) {
                    writes.append(write)
                    return
                }
                leveledCount += 1
                pending.append(write)
                if pending.count >= Self.pendingLimit {
                    var carry = pending.sorted { $0.counter < $1.counter }
                    pending.removeAll(keepingCapacity: true)
                    while let last = levels.last, last.count <= carry.count {
                        carry = Self.merged(levels.removeLast(), carry)
                    }
                    levels.append(carry)
                }
                if leveledCount > Swift.max(16, writes.count / 4) { sort() }
            }

            /// Merges every level into the main array.
            mutating func sort() {
                for level in levels { writes.append(contentsOf: level) }
                writes.append(contentsOf: pending)
                writes.sort { $0.counter < $1.counter }
                levels = []
                pending = []
                leveledCount = 0
            }

            static func merged(_ a: [Write], _ b: [Write]) -> [Write] {
                var result: [Write] = []
                result.reserveCapacity(a.count + b.count)
                var i = 0, j = 0
                while i < a.count && j < b.count {
                    if b[j].counter < a[i].counter { result.append(b[j]); j += 1 } else { result.append(a[i]); i += 1 }
                }
                result.append(contentsOf: a[i...])
                result.append(contentsOf: b[j...])
                return result
            }

            /// Calls `body` with every write whose counter is above `counter`.
            func forEach(above counter: UInt64, _ body: (Write) -> Void) {
                Self.forEach(in: writes, above: counter, body)
                for level in levels { Self.forEach(in: level, above: counter, body) }
                for write in pending where write.counter > counter { body(write) }
            }

            private static func forEach(in sorted: [Write], above counter: UInt64, _ body: (Write) -> Void) {
                var low = 0
                var high = sorted.count
                while low < high {
                    let middle = (low + high) / 2
                    if sorted[middle].counter <= counter { low = middle + 1 } else { high = middle }
                }
                for index in low..<sorted.count { body(sorted[index]) }
            }

            /// Whether the main array and every level are in counter order, and levels shrink.
            var isOrdered: Bool {
                let arrays = [writes] + levels
                for array in arrays where zip(array, array.dropFirst()).contains(where: { $0.counter > $1.counter }) { return false }
                return zip(levels, levels.dropFirst()).allSatisfy { $0.count > $1.count }
            }
        }

        /// The replicas that wrote, in the order the index first met them; each one's run is
        /// at the same position of ``replicaRuns``.
        private(set) var replicas: [ReplicaID] = []
        private(set) var replicaRuns: [Run] = []
        /// Where each replica's run is.
        private var positions: [ReplicaID: Int] = [:]
        /// The position of the run written to last: a store's own writes, and a delta's from
        /// one writer, all go to one run, found again without hashing its replica ID.
        private var lastPosition = 0
        /// How many entries the runs hold, stale ones included.
        private(set) var count = 0

        /// Every replica with its run.
        var runs: Zip2Sequence<[ReplicaID], [Run]> { zip(replicas, replicaRuns) }

        /// Whether each replica has one run and the table of positions finds it.
        var findsEveryRun: Bool {
            replicas.count == replicaRuns.count && positions.count == replicas.count
                && replicas.indices.allSatisfy { positions[replicas[$0]] == $0 }
        }

        /// An index of every sibling of `entries`.
        init(_ entries: [String: [Sibling]] = [:]) {
            for (key, siblings) in entries {
                for sibling in siblings {
                    replicaRuns[runPosition(addingIfAbsent: sibling.dot.replica)].appendUnsorted(Write(counter: sibling.dot.counter, key: key))
                    count += 1
                }
            }
            for position in replicaRuns.indices { replicaRuns[position].sort() }
        }

        /// The position of `replica`'s run, which is added (empty) if it has none.
        private mutating func runPosition(addingIfAbsent replica: ReplicaID) -> Int {
            if lastPosition < replicas.count && replicas[lastPosition] == replica { return lastPosition }
            if let found = positions[replica] {
                lastPosition = found
                return found
            }
            lastPosition = replicas.count
            positions[replica] = lastPosition
            replicas.append(replica)
            replicaRuns.append(Run())
            return lastPosition
        }

        /// Swaps which replica two positions name, leaving the table of positions as it was:
        /// for the test that shows ``ReplicatedMap/_dotIndexViolation()`` catches it.
        mutating func _swapReplicas(_ first: Int, _ second: Int) {
            replicas.swapAt(first, second)
        }

        mutating func insert(_ dot: Dot, forKey key: String) {
            replicaRuns[runPosition(addingIfAbsent: dot.replica)].append(Write(counter: dot.counter, key: key))
            count += 1
        }

        /// Indexes the siblings of `new` whose dots `old` (the key's previous siblings) lacks;
        /// both lists are in dot order.
        mutating func insert(_ new: [Sibling], replacing old: [Sibling], forKey key: String) {
            var i = 0
            for sibling in new {
                while i < old.count && old[i].dot < sibling.dot { i += 1 }
                if i < old.count && old[i].dot == sibling.dot { continue }
                insert(sibling.dot, forKey: key)
            }
        }

        /// Calls `body` with every indexed write not covered by `peer`, with its dot, given
        /// `holding`, the context of the map indexed (which covers every write it holds).
        ///
        /// Only a replica `holding` names above `peer` can have such a write: the two
        /// vectors are walked side by side, and only those replicas' runs are looked up,
        /// instead of searching `peer` for every replica of the index (which is cheaper
        /// only when `peer` names few replicas, as a new device's does).
        ///
        /// - Complexity: O(*r*) in the replicas of both contexts, plus a lookup and the
        ///   writes found for each replica `holding` names above `peer`.
        @inline(__always) // so that `body` is inlined into both ways of finding the writes
        func forEachWrite(notCoveredBy peer: VersionVector, holding: VersionVector, _ body: (Dot, String) -> Void) {
            if peer.isSmall(beside: holding) {
                for (replica, run) in runs {
                    run.forEach(above: peer[replica]) { body(Dot(replica: replica, counter: $0.counter), $0.key) }
                }
                return
            }
            VersionVector.walk(holding, peer) { replica, held, known in
                guard held > known, let position = positions[replica] else { return }
                replicaRuns[position].forEach(above: known) { body(Dot(replica: replica, counter: $0.counter), $0.key) }
            }
        }
    }

    /// Indexes what replacing `old` with `new` under `key` adds, and rebuilds the index when
    /// its stale entries outnumber the siblings (so it stays within about twice their number,
    /// and each rebuild is paid for by as many writes as it drops).
    mutating func reindex(forKey key: String, old: [Sibling], new: [Sibling]) {
        switch (Self.holdsOnlyTombstones(old), Self.holdsOnlyTombstones(new)) {
        case (false, true): _tombstoneKeys.insert(key)
        case (true, false): _tombstoneKeys.remove(key)
        default: break
        }
        _siblingCount += new.count - old.count
        _dotIndex.insert(new, replacing: old, forKey: key)
        if _dotIndex.count > 2 * _siblingCount + 64 { _dotIndex = _DotIndex(_entries) }
    }

    /// Whether a key with these siblings holds only tombstones (and at least one).
    static func holdsOnlyTombstones(_ siblings: [Sibling]) -> Bool {
        !siblings.isEmpty && siblings.allSatisfy(\.isTombstone)
    }

    /// The keys of `entries` that hold only tombstones (``_tombstoneKeys``).
    static func tombstoneKeys(of entries: [String: [Sibling]]) -> Set<String> {
        Set(entries.lazy.filter { holdsOnlyTombstones($0.value) }.map(\.key))
    }

    /// The index's own invariants, too costly to check after every mutation: every sibling
    /// has an entry, every replica's run is found at its position, each run's arrays are
    /// sorted and its levels shrink, stale entries are bounded, and the
    /// keys that hold only tombstones are exactly the ones ``_tombstoneKeys`` names. Checked by
    /// the tests that compare ``delta(for:)`` with a full scan.
    ///
    /// - Complexity: O(*n* log *n*) in the number of siblings.
    func _dotIndexViolation() -> String? {
        struct Entry: Hashable { var dot: Dot; var key: String }
        var indexed: Set<Entry> = []
        if !_dotIndex.findsEveryRun { return "the dot index does not find every replica's run at its position" }
        for (replica, run) in _dotIndex.runs {
            for write in run.writes { indexed.insert(Entry(dot: Dot(replica: replica, counter: write.counter), key: write.key)) }
            for level in run.levels + [run.pending] {
                for write in level { indexed.insert(Entry(dot: Dot(replica: replica, counter: write.counter), key: write.key)) }
            }
            if !run.isOrdered { return "a run of the dot index is out of counter order, or its levels do not shrink" }
        }
        var siblingCount = 0
        for key in _entries.keys.sortedByUTF8() {
            let siblings = _entries[key]!
            siblingCount += siblings.count
            for sibling in siblings where !indexed.contains(Entry(dot: sibling.dot, key: key)) {
                return "sibling \(sibling.dot) of \"\(key)\" is missing from the dot index"
            }
        }
        if _tombstoneKeys != Self.tombstoneKeys(of: _entries) { return "the keys that hold only tombstones are not the ones indexed" }
        if siblingCount != _siblingCount { return "the sibling count \(_siblingCount) does not match the entries (\(siblingCount))" }
        if _dotIndex.count > 2 * _siblingCount + 64 { return "the dot index holds \(_dotIndex.count) entries for \(_siblingCount) siblings" }
        if indexed.count > _dotIndex.count { return "the dot index counts \(_dotIndex.count) entries but holds \(indexed.count)" }
        return nil
    }

    /// ``collectableKeys(stableFrontier:)`` by scanning every key: the definition the index
    /// of tombstone keys must reproduce, kept for the tests that compare the two.
    func _collectableKeysByScanning(stableFrontier: VersionVector) -> [String] {
        _entries.compactMap { key, siblings in
            siblings.allSatisfy { $0.isTombstone && stableFrontier.contains($0.dot) } ? key : nil
        }.sortedByUTF8()
    }

    /// ``delta(for:)`` by scanning every key: the definition the index must reproduce, kept
    /// for the tests that compare the two.
    func _deltaByScanning(for peerContext: VersionVector) -> Delta {
        var changed: [String: [Sibling]] = [:]
        for (key, siblings) in _entries where siblings.contains(where: { !peerContext.contains($0.dot) }) {
            changed[key] = siblings
        }
        return Delta(entries: changed, context: context)
    }
}
