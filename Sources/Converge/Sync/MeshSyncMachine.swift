/// One device's side of the mesh topology (devices gossip with each other, no hub), as a
/// pure state machine.
///
/// It remembers, per peer, the context that peer *reported* in its last gossip, and
/// computes what it sends a peer for exactly that context: never a guessed one. Lost,
/// duplicated and reordered gossip is harmless for the same reasons as in the hub
/// topology. There is no authority, so the quota is soft (see ``Quota``): merged state
/// may exceed it, every replica flags it identically, and local writes that grow usage
/// are refused until it is back under. Tombstones are kept: without a membership that
/// every device agrees on, no device can know a tombstone is stable.
///
/// Write sessions (see ``WriterSessions``): a peer's gossip names the sessions that issued
/// its writer ID's recent counters; the machine records them per peer it heard from
/// directly (not from a broadcast such as a shared folder's file, which wants no reply and
/// names no recipient), up to the highest counter of that writer ID the peer's context reached. Gossip
/// whose sessions name another session for a counter both reach proves two copies of one
/// store writing under one ID: it is not applied (before it could make the device take the
/// copy's writes for ones it holds), and the sender is answered. Every gossip to a peer
/// names what the machine recorded of that peer's highest counter
/// (``SyncGossip/recipientTip``), so a restored or copied store that issued as many
/// counters as it lost finds out, as it does from a hub's ``SyncReply/sessionTip``. The
/// records live in memory: a restarted device records them again from the next gossip.
public struct MeshSyncMachine: Hashable, Sendable {
    /// This device's replica ID.
    public let device: ReplicaID
    /// The account the device syncs.
    public private(set) var account: AccountID
    /// What each peer last reported holding, by peer.
    public private(set) var peerContexts: [ReplicaID: VersionVector] = [:]
    /// What the machine knows of which sessions issued each writer ID's counters (see
    /// ``SessionRecord``), by writer ID: from each peer's gossip, of the peer's own writer ID
    /// and of those it relays. Never of the device's own writer ID (the store records its own).
    private(set) var writerRecords: [ReplicaID: SessionRecord] = [:]
    /// Counters withdrawn (see ``SyncGossip/withdrawnSessions``), by writer ID then first
    /// counter: relayed in every gossip, and refused in any.
    private(set) var withdrawnRecords: [SessionRecord] = []
    /// The most withdrawn records kept per writer ID (the latest first counters).
    static let maximumWithdrawnPerWriter = 8
    /// The writer ID each peer's last gossip was of, by peer: ``peerContexts`` is its report
    /// (none after a report of another copy was refused: the next gossip is the whole state).
    private(set) var peerWriters: [ReplicaID: ReplicaID] = [:]

    /// A machine that has heard from no peer yet: its first gossip to each is the device's
    /// whole state.
    public init(device: ReplicaID, account: AccountID = .default) {
        self.device = device
        self.account = account
    }

    /// The gossip for `peer`: what it lacks of `state`, as far as it has reported, with
    /// the device's write sessions and what the machine recorded of the peer's
    /// (``SyncGossip/recipientTip``).
    ///
    /// - Parameters:
    ///   - peer: The peer the gossip is for.
    ///   - state: The device's state.
    ///   - wantsReply: Whether `peer` should answer with its own changes.
    ///   - writer: The device's writer ID, which `writerSessions` are of (named in the
    ///     gossip when it is not ``device``).
    ///   - writerSessions: The sessions that issued the device's recent counters.
    /// - Complexity: O(*n*) in the siblings of `state`.
    public func gossip(to peer: ReplicaID, from state: ReplicatedMap, wantsReply: Bool = true, writer: ReplicaID? = nil,
                       writerSessions: WriterSessions = WriterSessions()) -> SyncGossip {
        var gossip = SyncGossip(account: account, sender: device, delta: state.delta(for: peerContexts[peer] ?? VersionVector()),
                                wantsReply: wantsReply)
        gossip.basis = peerContexts[peer]
        gossip.writerSessions = writerSessions
        if let writer, writer != device { gossip.writer = writer }
        gossip.recipient = peerWriters[peer]
        if !_ignoresWriterSessions {
            if let recipient = gossip.recipient, let known = writerRecords[recipient] { gossip.recipientTip = known.tip }
            gossip.relayedSessions = writerRecords.keys.sorted().compactMap { id in
                id == writer ?? device ? nil : writerRecords[id]?.relayed
            }
            // Whole: a shortened record would withdraw from another counter, and come back
            // as a second record of the same withdrawal.
            gossip.withdrawnSessions = withdrawnRecords
        }
        return gossip
    }

    /// The gossip for every reader of a broadcast medium, such as a shared folder, where
    /// this device publishes a sequence of messages that readers apply in order.
    ///
    /// A reader of the sequence holds the device's previous message when it reads the next,
    /// so each message carries what is new since the previous one, as far as the medium
    /// reports it: `published` is the context of the device's latest message that the
    /// medium holds, never a guess. With `published` `nil` (the medium holds nothing
    /// readable of this device, or a new sequence starts) the gossip is the whole state,
    /// which any reader can apply. Otherwise it names `published` as its
    /// ``SyncGossip/basis``: a reader that holds less (it took another file under that name,
    /// written by a twin of this device under the same replica ID, or the medium lost one)
    /// applies nothing of it (``SyncIgnoredReason/staleReport``) rather than take the
    /// context's claim to writes it never saw.
    ///
    /// - Parameters:
    ///   - state: The device's state.
    ///   - published: The context of the device's latest message in the medium, or `nil`.
    /// - Returns: The gossip, or `nil` if the medium already holds everything of `state`.
    /// - Complexity: O(*n*) in the siblings of `state`.
    public func broadcast(from state: ReplicatedMap, after published: VersionVector?) -> SyncGossip? {
        guard let published else {
            return SyncGossip(account: account, sender: device, delta: state.asDelta, wantsReply: false)
        }
        // Nothing can be new if the context is: every sibling's dot is in it.
        guard state.context != published else { return nil }
        var gossip = SyncGossip(account: account, sender: device, delta: state.delta(for: published), wantsReply: false)
        gossip.basis = published
        return gossip
    }

    /// Takes a message from a peer and returns what the device must do, in order: apply
    /// gossip of its account from another device (recording the sender's context as what
    /// it holds, and its write sessions), then answer the sender if it asked. Gossip whose
    /// write sessions disagree with what the sender's earlier gossip named is not applied
    /// (``SyncIgnoredReason/reusedCounters``): the device answers it, so the sender learns
    /// the tip it contradicts. Anything else is ignored.
    ///
    /// Gossip computed for what another writer ID of the device reported
    /// (``SyncGossip/recipient``) is not applied either
    /// (``SyncIgnoredReason/otherIncarnation``); the sender's report is recorded, and the
    /// device answers if asked, so the sender learns what the device holds now.
    ///
    /// Writes of the device's first writer ID that no copy of its store holds any more
    /// are adopted (``SyncAction/adopt(_:)``).
    ///
    /// - Parameters:
    ///   - message: The message from a peer.
    ///   - writer: The device's current writer ID, or `nil` not to check the gossip's
    ///     recipient (and to take a broadcast of the device's replica ID for its own, as
    ///     gossip between two devices always is).
    ///   - context: What the device holds, or `nil` not to check the gossip's
    ///     ``SyncGossip/basis`` (nor whether it holds more of a withdrawn writer ID than was
    ///     withdrawn).
    ///   - holds: Whether the device holds a write under its key, or `nil` to take it as
    ///     holding none: a write it holds is never adopted.
    /// - Returns: The actions, in order.
    /// - Complexity: O(*r*) in the replicas of the gossip's context, plus O(*s*²) in the
    ///   sessions' runs (at most ``WriterSessions/maximumRuns``).
    public mutating func receive(_ message: SyncMessage, as writer: ReplicaID? = nil, holding context: VersionVector? = nil,
                                 holds: ((_ key: String, _ write: Sibling) -> Bool)? = nil) -> [SyncAction] {
        guard case .gossip(var gossip) = message else { return [.ignore(.unexpected)] }
        guard gossip.account == account else { return [.ignore(.otherAccount(gossip.account))] }
        // Only gossip between two devices is compared and recorded
        // (``SyncGossip/isBetweenTwoDevices``).
        let betweenTwo = gossip.isBetweenTwoDevices
        // A broadcast is this device's own only under its current writer ID: another writer
        // ID of its replica ID is an earlier incarnation's (whose writes a restore may have
        // lost here) or a twin's (a copy of the store under the same replica ID).
        let fromSelf = betweenTwo || writer == nil ? gossip.sender == device : (gossip.writer ?? gossip.sender) == writer
        guard !fromSelf else { return [.ignore(.fromSelf)] }
        var actions: [SyncAction] = []
        if betweenTwo && !_ignoresWriterSessions {
            for withdrawn in gossip.withdrawnSessions where withdrawn.writer != writer ?? device {
                actions += take(withdrawn: withdrawn, holding: context)
            }
        }
        // Writes of an earlier writer ID of this device's replica that no copy of it holds
        // any more, which the device adopts (see ``orphanAdoption(in:as:)``).
        var adoption: OrphanAdoption?
        if betweenTwo, let writer, let found = orphanAdoption(in: gossip, as: writer, holds: holds) {
            adoption = found
            gossip = found.gossip
        }
        if betweenTwo && reusesCounters(gossip, as: writer) {
            // The sender's report came from another copy than its earlier ones, or it holds a
            // copy's writes under the dots of writes this device holds: forget its report, so
            // the answer and the next gossip carry everything (and the records that show it).
            peerContexts[gossip.sender] = nil
            // The answer names the refused report's writer ID, so it carries the recorded tip
            // that shows the copy its reuse (not the writer ID of a third copy heard since).
            peerWriters[gossip.sender] = gossip.writer ?? gossip.sender
            // Only gossip that asked is answered: two devices holding different copies'
            // writes refuse each other's gossip, and answering answers would never end.
            return actions + (gossip.wantsReply ? [.ignore(.reusedCounters), .answer(peer: gossip.sender)] : [.ignore(.reusedCounters)])
        }
        if let recipient = gossip.recipient, let writer, recipient != writer {
            peerContexts[gossip.sender] = gossip.delta.context
            peerWriters[gossip.sender] = gossip.writer ?? gossip.sender
            return actions + (gossip.wantsReply ? [.ignore(.otherIncarnation), .answer(peer: gossip.sender)] : [.ignore(.otherIncarnation)])
        }
        // What the device holds once the withdrawn writes are dropped.
        var holding = context
        for case .withdraw(let writer, let from) in actions {
            holding = holding.map { context in
                var counters: [ReplicaID: UInt64] = [:]
                for entry in context.sortedEntries { counters[entry.replica] = entry.replica == writer ? min(entry.counter, from - 1) : entry.counter }
                return VersionVector(counters)
            }
        }
        if let basis = gossip.basis, let holding, !basis.isDominated(by: holding) {
            // The device's storage went back since its report: the delta misses writes. The
            // sender learns what it holds from its answer or its next gossip.
            peerContexts[gossip.sender] = gossip.delta.context
            peerWriters[gossip.sender] = gossip.writer ?? gossip.sender
            return actions + (gossip.wantsReply ? [.ignore(.staleReport), .answer(peer: gossip.sender)] : [.ignore(.staleReport)])
        }
        // Records only of gossip the device takes: it relays them as what it holds.
        if betweenTwo {
            recordSessions(of: gossip, as: writer)
            recordRelayedSessions(of: gossip, as: writer)
        }
        // The latest report, not the union of all: a peer's context shrinks for its own
        // writer ID when it starts a new incarnation (a restored store), and a delta computed
        // for more than it holds would miss what it lost. A stale report is always safe.
        peerContexts[gossip.sender] = gossip.delta.context
        peerWriters[gossip.sender] = gossip.writer ?? gossip.sender
        actions.append(.applyDelta(gossip.delta))
        if let adoption {
            // Withdrawn only now that the device takes the writes: every holder drops them
            // and fetches the device's copies.
            for record in adoption.withdrawn { withdraw(record) }
            actions.append(.adopt(adoption.orphans))
        }
        return actions + (gossip.wantsReply ? [.answer(peer: gossip.sender)] : [])
    }

    /// Writes a peer holds under counters of an earlier writer ID of this device's replica
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
    /// (``ReplicaID/base``) when the device writes under a later one, from the first
    /// counter for which the sender's relayed record of their sessions names another
    /// session than the device's record (two copies of the store issued those counters),
    /// when nothing else in the gossip is refused; `nil` if there are none.
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
    /// Not adopted: writes under counters of those sessions that a withdrawn record already
    /// covers (their copies exist: a holder that held more of the session than the one the
    /// device adopted from); writes the device holds itself, the same write under the same
    /// dot (`holds`): a record that disputes only those is not believed, and the gossip is
    /// refused as any whose records disagree. Two successors (copies of the store that both
    /// moved on) may each adopt an orphan: it is then held twice, under two dots.
    ///
    /// - Parameters:
    ///   - gossip: Gossip between two devices.
    ///   - writer: The device's current writer ID.
    ///   - holds: Whether the device holds a write, under its key; `nil` takes it as
    ///     holding none.
    func orphanAdoption(in gossip: SyncGossip, as writer: ReplicaID, holds: ((String, Sibling) -> Bool)?) -> OrphanAdoption? {
        guard !_ignoresWriterSessions, !writer.isBase else { return nil }
        let senderWriter = gossip.writer ?? gossip.sender
        var adoption = OrphanAdoption(gossip: gossip, orphans: [:], withdrawn: [])
        for record in gossip.relayedSessions where record.writer == writer.base && record.writer != senderWriter {
            // Writes that a copy withdrew already have a re-stamped copy.
            guard !withdrawnRecords.contains(where: { $0.writer == record.writer && record.holdsWithdrawn($0) }),
                  let first = writerRecords[record.writer]?.firstDisagreement(with: record),
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
                    if holds?(key, sibling) == true { heldAlready = true } else { orphans[key, default: []].append(sibling) }
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

    /// Keeps a withdrawn record and, if this device holds writes of it, drops them: the
    /// action to carry out (none if it holds none, or knew the record already).
    private mutating func take(withdrawn: SessionRecord, holding context: VersionVector?) -> [SyncAction] {
        guard !withdrawnRecords.contains(withdrawn) else { return [] }
        withdraw(withdrawn)
        // The record shows the device took the withdrawn writes; writes of that writer ID
        // beyond the withdrawn ones (from a shared folder, say) are the other copy's.
        guard let known = writerRecords[withdrawn.writer], known.holdsWithdrawn(withdrawn),
              (context?[withdrawn.writer] ?? known.through) <= withdrawn.through else { return [] }
        writerRecords[withdrawn.writer] = known.below(withdrawn.first)
        return [.withdraw(writer: withdrawn.writer, from: withdrawn.first)]
    }

    /// Records that `record`'s counters are withdrawn (a copy of its writer re-stamped its
    /// writes under them), to relay it to every peer and to refuse gossip from peers that
    /// hold them. The store calls it for its own writer ID when it starts a new incarnation.
    ///
    /// - Parameter record: The withdrawn runs, from the first withdrawn counter on.
    package mutating func withdraw(_ record: SessionRecord) {
        guard !withdrawnRecords.contains(record) else { return }
        withdrawnRecords.append(record)
        withdrawnRecords.sort(by: SessionRecord.canonicallyPrecedes)
        let ofWriter = withdrawnRecords.filter { $0.writer == record.writer }
        if ofWriter.count > Self.maximumWithdrawnPerWriter {
            let dropped = ofWriter.prefix(ofWriter.count - Self.maximumWithdrawnPerWriter)
            withdrawnRecords.removeAll { dropped.contains($0) }
        }
    }

    /// Whether `gossip`'s write sessions name another session, for a counter of its
    /// writer ID both reach, than the machine's record of that writer ID, or a record it
    /// relays disagrees with the machine's record of that writer ID: two copies of one store
    /// issued the same counters, and the two devices hold different writes under them. Also
    /// when the gossip's own writes, or a record it relays, are withdrawn ones.
    ///
    /// - Parameters:
    ///   - gossip: Gossip from a peer.
    ///   - writer: The device's own writer ID (its record is the store's, not compared here).
    /// - Returns: Whether some counters were issued twice.
    public func reusesCounters(_ gossip: SyncGossip, as writer: ReplicaID? = nil) -> Bool {
        guard !_ignoresWriterSessions else { return false }
        let senderWriter = gossip.writer ?? gossip.sender
        if let known = writerRecords[senderWriter],
           gossip.writerSessions.disagrees(with: known.runs, through: min(known.through, gossip.delta.context[senderWriter])) {
            return true
        }
        // Gossip its writer sent before it withdrew the counters it carries (delivered late):
        // taken, it would hand back the writes the withdrawal dropped here.
        if let own = SessionRecord(writer: senderWriter, runs: gossip.writerSessions, through: gossip.delta.context[senderWriter]),
           withdrawnRecords.contains(where: { $0.writer == senderWriter && own.holdsWithdrawn($0) }) {
            return true
        }
        return gossip.relayedSessions.contains { record in
            guard record.writer != writer ?? device, record.writer != senderWriter else { return false }
            // A peer that holds withdrawn writes would hand them back.
            if withdrawnRecords.contains(where: { $0.writer == record.writer && record.holdsWithdrawn($0) }) { return true }
            guard let known = writerRecords[record.writer] else { return false }
            return known.firstDisagreement(with: record) != nil
        }
    }

    /// Records the sender's write sessions, when they reach its context's counter of its
    /// writer ID and go as far as the record.
    private mutating func recordSessions(of gossip: SyncGossip, as writer: ReplicaID?) {
        let senderWriter = gossip.writer ?? gossip.sender
        guard senderWriter != writer ?? device,
              let record = SessionRecord(writer: senderWriter, runs: gossip.writerSessions, through: gossip.delta.context[senderWriter])
        else { return }
        take(record)
    }

    /// Records what applied gossip relays of other writer IDs' sessions: only of writer IDs
    /// its context holds writes of (a sender relays what it holds), so the records a device
    /// keeps, stores and relays grow with its context, not with what peers make up.
    private mutating func recordRelayedSessions(of gossip: SyncGossip, as writer: ReplicaID?) {
        let senderWriter = gossip.writer ?? gossip.sender
        for record in gossip.relayedSessions where record.writer != writer ?? device && record.writer != senderWriter
            && gossip.delta.context[record.writer] > 0 {
            take(record)
        }
    }

    /// Keeps `record` when it reaches at least as far as the one held (which it agrees with).
    private mutating func take(_ record: SessionRecord) {
        guard let known = writerRecords[record.writer] else {
            writerRecords[record.writer] = record
            return
        }
        guard record.through >= known.through else { return }
        writerRecords[record.writer] = known.continued(by: record)
    }

    /// Switches to another account: forget everything the peers of the old one reported.
    ///
    /// - Parameter newAccount: The account to sync from now on.
    public mutating func switchAccount(to newAccount: AccountID) {
        account = newAccount
        peerContexts = [:]
        writerRecords = [:]
        withdrawnRecords = []
        peerWriters = [:]
    }

    /// What the machine knows of write sessions (``writerRecords`` and the withdrawn
    /// records), encoded for the store to keep with its state: a restarted device still
    /// tells copies apart.
    package func encodedSessions() -> [UInt8] {
        var writer = BinaryWriter()
        writer.writeVarint(UInt64(writerRecords.count))
        for id in writerRecords.keys.sorted() { writerRecords[id]!.encode(into: &writer) }
        writer.writeVarint(UInt64(withdrawnRecords.count))
        for record in withdrawnRecords { record.encode(into: &writer) }
        return writer.bytes
    }

    /// Takes back what ``encodedSessions()`` wrote; an unreadable record is ignored (the
    /// machine then knows nothing, as a new one).
    package mutating func restoreSessions(from bytes: [UInt8]) {
        var reader = BinaryReader(bytes)
        var records: [ReplicaID: SessionRecord] = [:]
        var withdrawn: [SessionRecord] = []
        do throws(ConvergeError) {
            for _ in 0..<(try reader.readCount(limit: 1 << 20, minimumElementBytes: 13)) {
                let record = try SessionRecord(from: &reader)
                records[record.writer] = record
            }
            for _ in 0..<(try reader.readCount(limit: 1 << 20, minimumElementBytes: 13)) {
                withdrawn.append(try SessionRecord(from: &reader))
            }
        } catch {
            return
        }
        guard reader.isAtEnd else { return }
        writerRecords = records
        withdrawnRecords = []
        for record in withdrawn { withdraw(record) }
    }

    /// A broken variant for tests: the machine neither refuses gossip whose sessions
    /// disagree with its record nor names tips (the mesh as it was before it compared
    /// write sessions).
    @_spi(Testing) public var _ignoresWriterSessions = false
}
