/// Orphans in the mesh: writes of a replica's first writer ID that a copy of its store
/// wrote under counters another copy issued too, and then lost (its disk was replaced, or
/// restored from a backup), so that only peers hold them. No copy of the writer can re-stamp
/// and withdraw them, and the devices holding them and the devices holding the other
/// copy's writes under those counters would refuse each other's gossip for good. The
/// writer's new incarnation adopts them.
extension MeshSyncMachine {
    /// Writes a peer holds under counters of this device's first writer ID
    /// (``ReplicaID/base``) that another copy of the store issued as well, and the gossip
    /// left to apply without them.
    struct OrphanAdoption {
        /// The gossip without those writes, and with its context for their writer ID
        /// lowered to below the first of them.
        var gossip: SyncGossip
        /// The writes, by key, under their old dots.
        var orphans: [String: [Sibling]]
        /// The records of those writes' sessions, from their first counter on.
        var withdrawn: [SessionRecord]
    }

    /// The writes of `gossip` this device adopts: those of its replica's first writer ID
    /// (``ReplicaID/base``) when the device writes under a later one and the sender's
    /// relayed record of their sessions provably disagrees with the device's record (two
    /// copies of the store issued the same counters), from the first counter for which the
    /// relayed record names a session and the device's record does not show that one
    /// (another, or none: the copies may have parted inside a run the device's record does
    /// not know), when nothing else in the gossip is refused; `nil` if there are none.
    ///
    /// Known limits: a write both copies share under such an unknown run, which the
    /// device's lineage has since deleted or overwritten, is adopted too and comes back as
    /// a sibling (a multi-value or add-wins policy shows it); an unknown run in the
    /// *relayed* record still hides the orphans under it, and they stay unadopted.
    ///
    /// Such writes are orphans: a copy of the store wrote them and then lost them (its
    /// disk was replaced, or restored from a backup), so no copy of the writer can re-stamp
    /// and withdraw them, and devices holding them and devices holding the other copy's
    /// would refuse each other's gossip for good. The device is the writer's successor:
    /// it re-stamps them under its own writer ID (``SyncAction/adopt(_:)``) and withdraws
    /// the orphaned counters, so every holder drops them and fetches its copies, and the
    /// writes it holds under those counters stand. Only gossip computed for a report that
    /// did not reach those counters (or for none) is sure to carry every orphan.
    ///
    /// Not adopted: writes under counters that a withdrawn record of those sessions from the
    /// disputed counter or before already covers (their copies exist: a holder that held
    /// more of the session than the one the device adopted from); writes the device holds
    /// itself, the same write under the same dot (`holds`): a record that disputes only
    /// those is not believed, and the gossip is refused as any whose records disagree; any
    /// write, if the sender's context holds more of the writer ID than its record reaches.
    ///
    /// The device takes for orphans the writes of whichever lineage it heard of second: its
    /// record of its first writer ID is the one peers relayed first. If a copy of the store
    /// still writes under that ID (a clone that stayed), the device may adopt that copy's
    /// writes, which the copy re-stamps in turn when it finds its counters reused: they are
    /// then held twice, under two dots, and nothing is lost. So it is when two successors
    /// (copies of the store that both moved on) each adopt an orphan.
    ///
    /// - Parameters:
    ///   - gossip: Gossip between two devices.
    ///   - writer: The device's current writer ID.
    ///   - holds: Whether the device holds a write, under its key; `nil` adopts nothing.
    func orphanAdoption(in gossip: SyncGossip, as writer: ReplicaID, holds: ((String, Sibling) -> Bool)?) -> OrphanAdoption? {
        guard !_ignoresWriterSessions, !writer.isBase, let holds else { return nil }
        let senderWriter = gossip.writer ?? gossip.sender
        var adoption = OrphanAdoption(gossip: gossip, orphans: [:], withdrawn: [])
        for record in gossip.relayedSessions where record.writer == writer.base && record.writer != senderWriter {
            // Writes that a copy withdrew already have a re-stamped copy.
            // The withdrawal reaches as far as the record: a sender holding more of the writer
            // ID than its record shows (read from a folder, say) would keep those writes.
            guard !withdrawnRecords.contains(where: { $0.writer == record.writer && record.holdsWithdrawn($0) }),
                  gossip.delta.context[record.writer] <= record.through,
                  let known = writerRecords[record.writer], known.firstDisagreement(with: record) != nil,
                  // From the first counter the device's record does not show issued by the
                  // record's session: the copies may have parted inside a gap of it.
                  let first = known.runs.firstCounterNotShownShared(with: record.runs, through: min(known.through, record.through)),
                  (gossip.basis?[record.writer] ?? 0) < first,
                  let withdrawn = SessionRecord.withdrawn(writer: record.writer, runs: record.runs, from: first, through: record.through)
            else { continue }
            let copied = withdrawnRecords.filter { $0.writer == record.writer && $0.first <= first && $0.firstDisagreement(with: record) == nil }
                .map(\.through).max() ?? 0
            let adoptingFrom = max(first, copied + 1)
            var delta = adoption.gossip.delta
            var orphans: [String: [Sibling]] = [:]
            var heldAlready = false
            for (key, siblings) in delta.entries where siblings.contains(where: { $0.dot.replica == record.writer && $0.dot.counter >= first }) {
                for sibling in siblings where sibling.dot.replica == record.writer && sibling.dot.counter >= adoptingFrom {
                    if holds(key, sibling) { heldAlready = true } else { orphans[key, default: []].append(sibling) }
                }
                // A key left with none keeps its empty list: the delta's context still drops
                // what the orphans superseded.
                delta.entries[key] = siblings.filter { !($0.dot.replica == record.writer && $0.dot.counter >= first) }
            }
            guard !heldAlready || !orphans.isEmpty else { continue }
            delta.context.set(record.writer, to: min(delta.context[record.writer], first - 1))
            adoption.gossip.delta = delta
            adoption.gossip.relayedSessions.removeAll { $0 == record }
            adoption.withdrawn.append(withdrawn)
            adoption.orphans.merge(orphans) { $0 + $1 }
        }
        guard !adoption.withdrawn.isEmpty, !reusesCounters(adoption.gossip, as: writer) else { return nil }
        return adoption
    }
}
