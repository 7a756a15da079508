/// Incarnations: how a replica recovers when its counters were reused.
///
/// A store restored from a backup, a store file copied to a second device, or a store
/// deleted and recreated under the same replica ID issues counters it (or its twin) has
/// already issued, and peers would take the new writes for ones they have seen. That cannot
/// be prevented locally, but it can be detected by whoever knows more of the replica's
/// history: a device never knows less of its own writes than a peer does, so a hub, a peer
/// or the replica's own files in a shared folder that know a higher counter of the
/// replica's writer ID than the store itself prove the reuse.
///
/// The store then starts a new incarnation: it writes as `ID~n` from then on, and re-stamps
/// under the new writer ID (keeping values and timestamps) every write of its old writer ID
/// that no peer is known to have acknowledged, so none of them can be taken for a write
/// peers have seen. Its context for the old writer ID goes back to what peers
/// acknowledged, so it fetches again the writes of the old ID it lost with the restore.
/// The message that revealed the reuse was computed for the store's wrong context and is
/// not applied; the next exchange brings everything. Writes the store re-stamps that peers
/// did have arrive twice (the same value and timestamp under two dots), which a read
/// resolves like any concurrent pair; nothing is lost.
///
/// What is acknowledged is recorded durably: the highest counter of the current writer ID
/// any hub or peer reported holding.
extension ReplicatedKeyValueStore {
    static let incarnationKey = "incarnation"
    static let acknowledgedKey = "acknowledged"

    /// The incarnation recorded in `metadata` (1 if none is).
    static func incarnation(in metadata: [String: [UInt8]]) -> UInt64 {
        metadata[incarnationKey].flatMap { UInt64(String(decoding: $0, as: UTF8.self)) }.map { max($0, 1) } ?? 1
    }

    /// The highest counter of the current writer ID a hub or peer reported holding.
    static func acknowledged(in metadata: [String: [UInt8]]) -> UInt64 {
        metadata[acknowledgedKey].flatMap { UInt64(String(decoding: $0, as: UTF8.self)) } ?? 0
    }

    /// The ID this store's writes are stamped with: ``replicaID`` in its first incarnation,
    /// `replicaID~n` after it found its counters reused (see ``ReplicaID/incarnation(_:)``).
    public var writerID: ReplicaID {
        state.withLock { $0.writerID }
    }

    /// Takes what a medium holds of this replica's own writes (the context of its latest
    /// file in a shared folder): if it knows more of the current writer ID than the store,
    /// the counters were reused and the store starts a new incarnation.
    ///
    /// - Returns: Whether a new incarnation started.
    /// - Throws: The storage's error.
    @discardableResult
    package func checkOwnHistory(_ known: VersionVector) throws(ConvergeError) -> Bool {
        try performWrite { (state: State) throws(ConvergeError) -> WritePlan<Bool> in
            guard state.reusesCounters(given: known) else { return WritePlan(result: false) }
            return WritePlan(update: .replaceAll(try state.reincarnated()), result: true)
        }
    }
}

extension ReplicatedKeyValueStore.State {
    /// Whether `known`, what a hub or peer holds, proves that this store's current writer
    /// ID issued counters it no longer knows of.
    func reusesCounters(given known: VersionVector) -> Bool {
        !blindToReusedCounters && known[writerID] > map.context[writerID]
    }

    /// The stored state of the next incarnation: the writes of the current writer ID that no
    /// peer acknowledged re-stamped under the next one, in counter order.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` if the result breaks an invariant of the
    ///   map (it cannot: every re-stamped write is covered by the new context).
    func reincarnated() throws(ConvergeError) -> StoredState {
        let old = writerID
        let acknowledged = ReplicatedKeyValueStore.acknowledged(in: metadata)
        let incarnation = ReplicatedKeyValueStore.incarnation(in: metadata) + 1
        let newWriter = old.base.incarnation(incarnation)
        var unacknowledged: [(counter: UInt64, key: String)] = []
        for (key, siblings) in map.entries {
            for sibling in siblings where sibling.dot.replica == old && sibling.dot.counter > acknowledged {
                unacknowledged.append((sibling.dot.counter, key))
            }
        }
        unacknowledged.sort { $0.counter < $1.counter }
        var renamed: [Dot: Dot] = [:]
        for (index, write) in unacknowledged.enumerated() {
            renamed[Dot(replica: old, counter: write.counter)] = Dot(replica: newWriter, counter: UInt64(index + 1))
        }
        var entries = map.entries
        for key in Set(unacknowledged.map(\.key)) {
            entries[key] = entries[key]!.map { sibling in
                renamed[sibling.dot].map(sibling.restamped) ?? sibling
            }.sorted { $0.dot < $1.dot }
        }
        var counters: [ReplicaID: UInt64] = [:]
        for entry in map.context.sortedEntries { counters[entry.replica] = entry.counter }
        counters[old] = acknowledged
        counters[newWriter] = UInt64(unacknowledged.count)
        var metadata = metadata
        metadata[ReplicatedKeyValueStore.incarnationKey] = Array(String(incarnation).utf8)
        metadata[ReplicatedKeyValueStore.acknowledgedKey] = Array("0".utf8)
        return StoredState(map: try ReplicatedMap(entries: entries, context: VersionVector(counters)), clock: clock.latest,
                           metadata: metadata)
    }

    /// The metadata change recording that a hub or peer holds `known` of this store's
    /// writes, or `nil` if it says nothing new.
    func acknowledgement(from known: [VersionVector]) -> [String: [UInt8]?]? {
        let highest = known.map { $0[writerID] }.max() ?? 0
        guard highest > ReplicatedKeyValueStore.acknowledged(in: metadata) else { return nil }
        return [ReplicatedKeyValueStore.acknowledgedKey: Array(String(highest).utf8)]
    }
}
