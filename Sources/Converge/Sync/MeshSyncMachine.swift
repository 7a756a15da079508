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
    /// The most withdrawn records kept of one replica ID, all its writer IDs together (in
    /// canonical order, the last ones): of the device's own, and of every other replica.
    ///
    /// The device's own records are those it withdrew itself (a new incarnation, an
    /// adoption of orphans), which must outlive later ones. An adoption's record, dropped,
    /// is neither relayed to the holders of the orphans (who keep them under the old dots)
    /// nor there to stop the device adopting the same orphans again from their next gossip.
    /// Each is a copy of the device's own store that wrote and was lost, so real use stays
    /// far below.
    ///
    /// A peer keeps as many of another replica's records as that replica keeps of its own,
    /// in the same order: it keeps every record the replica relays to it, so a holder of an
    /// orphan that hears of the adoption only through peers still learns of it. (With fewer,
    /// a peer dropped the successor's first adoption records and never relayed them on.)
    ///
    /// One bound for every writer ID of a replica, because a peer names the writer IDs: a
    /// bound per ID would let one relaying made-up records under many made-up incarnations
    /// grow the machine, and its gossip past what peers decode. Past the bound the first
    /// are dropped, and the risk of adopting again comes back.
    static let maximumWithdrawnPerReplica = 64
    /// The most withdrawn records kept of all replicas together, so that a peer relaying
    /// made-up records of many made-up replica IDs grows neither the machine nor its gossip
    /// (which relays them whole) past what peers decode (at most
    /// ``DecodingLimits/maximumReplicas`` records, 4,096 by default). Sixteen replicas'
    /// worth at ``maximumWithdrawnPerReplica``.
    ///
    /// Past it, the device's own records are never dropped; of other replicas', first those
    /// of replicas the machine records no write sessions of (a withdrawn record drops writes
    /// here only where it agrees with such a record), then the others, each in canonical
    /// order. A peer that names the replica IDs can thus push out the records of a replica
    /// whose sessions the device records only by making it record the sessions of made-up
    /// replicas too (it records them only of writer IDs its context holds), not by relaying
    /// made-up records alone.
    static let maximumWithdrawn = 1_024
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
    /// Writes of the device's first writer ID that it takes for orphans (no copy of its
    /// store holds them any more) are adopted (``SyncAction/adopt(_:)``).
    ///
    /// - Parameters:
    ///   - message: The message from a peer.
    ///   - writer: The device's current writer ID, or `nil` not to check the gossip's
    ///     recipient (and to take a broadcast of the device's replica ID for its own, as
    ///     gossip between two devices always is).
    ///   - context: What the device holds, or `nil` not to check the gossip's
    ///     ``SyncGossip/basis`` (nor whether it holds more of a withdrawn writer ID than was
    ///     withdrawn).
    ///   - holds: Whether the device holds a write under its key: a write it holds is never
    ///     adopted. `nil` (the default) adopts nothing: a caller that passes it must carry
    ///     out ``SyncAction/adopt(_:)``, since the machine withdraws the adopted counters.
    /// - Returns: The actions, in order.
    /// - Complexity: O(*r*) in the replicas of the gossip's context, plus O(*s*²) in the
    ///   sessions' runs (at most ``WriterSessions/maximumRuns``); when the gossip relays a
    ///   disputed record of the device's first writer ID, also O(*n*) in its siblings, each
    ///   of that writer ID looked up with `holds`.
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
            // Made once for the whole gossip, which may carry thousands of records.
            var recorded: Set<ReplicaID>?
            for withdrawn in gossip.withdrawnSessions where withdrawn.writer != writer ?? device {
                actions += take(withdrawn: withdrawn, holding: context, recorded: &recorded)
            }
        }
        // Writes of this device's first writer ID that it takes for orphans, and adopts
        // (see ``orphanAdoption(in:as:holds:)``).
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

    /// Keeps a withdrawn record and, if this device holds writes of it, drops them: the
    /// action to carry out (none if it holds none, or knew the record already).
    ///
    /// - Parameter recorded: The replicas whose write sessions the machine records, made
    ///   when first needed and kept for the caller's next record (see ``withdraw(_:)``).
    private mutating func take(withdrawn: SessionRecord, holding context: VersionVector?,
                               recorded: inout Set<ReplicaID>?) -> [SyncAction] {
        guard !withdrawnPlace(of: withdrawn).kept else { return [] }
        withdraw(withdrawn, recorded: &recorded)
        // The record shows the device took the withdrawn writes; writes of that writer ID
        // beyond the withdrawn ones (from a shared folder, say) are the other copy's.
        guard let known = writerRecords[withdrawn.writer], known.holdsWithdrawn(withdrawn),
              (context?[withdrawn.writer] ?? known.through) <= withdrawn.through else { return [] }
        writerRecords[withdrawn.writer] = known.below(withdrawn.first)
        recorded = nil
        return [.withdraw(writer: withdrawn.writer, from: withdrawn.first)]
    }

    /// Where `record` goes in ``withdrawnRecords`` (which stay in canonical order), and
    /// whether it is there already: a binary search, since a peer's gossip may carry
    /// thousands of records, each looked up.
    private func withdrawnPlace(of record: SessionRecord) -> (index: Int, kept: Bool) {
        var low = 0
        var high = withdrawnRecords.count
        while low < high {
            let middle = (low + high) / 2
            if SessionRecord.canonicallyPrecedes(withdrawnRecords[middle], record) { low = middle + 1 } else { high = middle }
        }
        return (low, low < withdrawnRecords.count && withdrawnRecords[low] == record)
    }

    /// Records that `record`'s counters are withdrawn (a copy of its writer re-stamped its
    /// writes under them), to relay it to every peer and to refuse gossip from peers that
    /// hold them. The store calls it for its own writer ID when it starts a new incarnation.
    ///
    /// - Parameter record: The withdrawn runs, from the first withdrawn counter on.
    package mutating func withdraw(_ record: SessionRecord) {
        var recorded: Set<ReplicaID>?
        withdraw(record, recorded: &recorded)
    }

    /// ``withdraw(_:)``, with the replicas whose write sessions the machine records (which
    /// records go first past ``maximumWithdrawn``) made only when a record must go, and
    /// kept in `recorded` for the caller's next record: a gossip at the bound that carries
    /// thousands of records makes the set once, not once per record.
    private mutating func withdraw(_ record: SessionRecord, recorded: inout Set<ReplicaID>?) {
        let (index, kept) = withdrawnPlace(of: record)
        guard !kept else { return }
        withdrawnRecords.insert(record, at: index)
        let replica = record.writer.base
        // The prefix test first: it is the cheap one, and rules out nearly every record.
        let ofReplica = withdrawnRecords.indices.filter {
            withdrawnRecords[$0].writer.rawValue.hasPrefix(replica.rawValue) && withdrawnRecords[$0].writer.isIncarnation(of: replica)
        }
        for index in ofReplica.prefix(max(0, ofReplica.count - Self.maximumWithdrawnPerReplica)).reversed() {
            withdrawnRecords.remove(at: index)
        }
        while withdrawnRecords.count > Self.maximumWithdrawn {
            // A set only to look up: which record goes is decided by the canonical order.
            let replicas = recorded ?? Set(writerRecords.keys.map(\.base))
            recorded = replicas
            let records = withdrawnRecords
            let own = device
            let others = records.indices.lazy.filter { !records[$0].writer.isIncarnation(of: own) }
            guard let index = others.first(where: { !replicas.contains(records[$0].writer.base) }) ?? others.first else { break }
            withdrawnRecords.remove(at: index)
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
