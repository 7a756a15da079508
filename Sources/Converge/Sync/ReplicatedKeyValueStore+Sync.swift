/// Sync: a store attached to a ``SyncTransport`` exchanges changes with a hub through it,
/// and every transport and topology (the in-process hub, a network, the simulator, the
/// mesh, the shared folder) goes through the same seam: the store's sync state machines
/// turn each message into ``SyncAction``s, which the store carries out in one place.
extension ReplicatedKeyValueStore {
    // MARK: Creating a synced store

    /// Creates a store kept in memory that syncs through `transport`: ``sync()`` exchanges
    /// changes with the hub behind it.
    ///
    /// - Parameters:
    ///   - replicaID: This device's replica ID, unique among the hub's devices (from a
    ///     `String`: `try ReplicaID(validating: text)`).
    ///   - transport: How requests reach the hub.
    ///   - account: The account whose data the store holds.
    ///   - quota: The limits of local writes; use the hub's (iCloud's by default).
    ///   - policies: How reads resolve concurrent siblings.
    ///   - clock: The physical time source.
    public convenience init(
        replicaID: ReplicaID, transport: any SyncTransport, account: AccountID = .default, quota: Quota = .iCloud,
        policies: MergePolicies = MergePolicies(), clock: any PhysicalClock = SystemClock()
    ) {
        // An empty in-memory storage cannot fail to load.
        try! self.init(replicaID: replicaID, transport: transport, account: account, storage: InMemoryStorage(),
                       quota: quota, policies: policies, clock: clock)
    }

    /// Opens a store on `storage` that syncs through `transport`.
    ///
    /// Storage that holds another account's domain is switched to `account` (never synced
    /// as this one); storage that names no account is marked as `account`'s.
    ///
    /// - Throws: What the storage's ``Storage/load()`` or ``Storage/save(_:)`` throws.
    public convenience init(
        replicaID: ReplicaID, transport: any SyncTransport, account: AccountID = .default, storage: any Storage,
        quota: Quota = .iCloud, policies: MergePolicies = MergePolicies(), clock: any PhysicalClock = SystemClock()
    ) throws(ConvergeError) {
        try self.init(replicaID: replicaID, storage: storage, quota: quota, policies: policies, clock: clock,
                      transport: transport, account: account)
        try adopt(account)
    }

    /// Creates a store kept in memory and attached to an in-process hub: its
    /// ``synchronize()`` pushes local changes to the hub and pulls the others', before it
    /// returns.
    ///
    /// - Parameters:
    ///   - replicaID: This device's replica ID, unique among the hub's devices (from a
    ///     `String`: `try ReplicaID(validating: text)`).
    ///   - hub: The hub to sync with.
    ///   - account: The account whose data the store holds.
    ///   - quota: The limits of local writes; the hub's by default.
    ///   - policies: How reads resolve concurrent siblings.
    ///   - clock: The physical time source.
    public convenience init(
        replicaID: ReplicaID, hub: InMemoryHub, account: AccountID = .default, quota: Quota? = nil,
        policies: MergePolicies = MergePolicies(), clock: any PhysicalClock = SystemClock()
    ) {
        self.init(replicaID: replicaID, transport: hub, account: account, quota: quota ?? hub.quota, policies: policies, clock: clock)
    }

    /// Opens a store on `storage`, attached to an in-process hub.
    ///
    /// - Throws: What the storage's ``Storage/load()`` or ``Storage/save(_:)`` throws.
    public convenience init(
        replicaID: ReplicaID, hub: InMemoryHub, account: AccountID = .default, storage: any Storage,
        quota: Quota? = nil, policies: MergePolicies = MergePolicies(), clock: any PhysicalClock = SystemClock()
    ) throws(ConvergeError) {
        try self.init(replicaID: replicaID, transport: hub, account: account, storage: storage, quota: quota ?? hub.quota,
                      policies: policies, clock: clock)
    }

    // MARK: Syncing

    /// Exchanges changes with the hub once: pushes what the hub lacks (or polls, when
    /// nothing is new), and applies the answer before it returns.
    ///
    /// Applying the answer posts `didChangeExternallyNotification` for the keys whose
    /// values changed (`serverChange`, `initialSyncChange` for a device returning after
    /// retirement, `quotaViolationChange` for writes the hub superseded). Calling it
    /// concurrently is safe: each call is one exchange, and answers are idempotent. A store
    /// created without a transport has nothing to exchange: it only takes what other
    /// writers of its storage wrote (``refresh()``).
    ///
    /// A poll or push accepts a reply relative to what the store holds
    /// (``SyncPoll/acceptsRelativeReply``, ``SyncPush/relativeReplyDigest``, message format 6),
    /// which a hub built before it refuses: a request whose message the hub refused (a
    /// ``SyncTransportFailure`` whose ``SyncTransportFailure/refusedTheMessage`` is true, as
    /// an HTTP `400` is, or an in-process hub's ``ConvergeError/malformed(_:)`` for an
    /// unsupported version or an unknown flag) is sent again at once in format 4, and the
    /// store sends format 4 until it is opened again.
    ///
    /// - Throws: What the transport throws (``ConvergeError/unreachable(_:)`` from an
    ///   ``InMemoryHub`` that is not reachable), ``ConvergeError/malformed(_:)`` for an
    ///   answer that is not a valid answer of this store's account, or the storage's error.
    ///   Nothing is lost: the store is unchanged, and the next call repairs what this one
    ///   missed.
    /// - Complexity: O(*n*) in the siblings of the store's state to compute a push, plus
    ///   the cost of applying the answer.
    public func sync() async throws {
        guard let transport else {
            try refresh()
            return
        }
        scheduledSyncs.withLock { $0.pending = false }
        // Other writers of the storage (another process on the same file) may have written
        // since this object looked: push their writes too, and tell the app of them.
        try refresh()
        let (request, account, acceptsRelativeReply) = try hubRequest()
        let answer: [UInt8]
        do { answer = try await transport.exchange(request) } catch {
            guard let plain = formatFourRequest(after: error, of: request, acceptsRelativeReply: acceptsRelativeReply) else { throw error }
            // Format 4 from now on, whether or not the hub takes this one: a refusal that is not
            // about the format must not cost every later request twice.
            state.withLock { $0.requestsAcceptRelativeReply = false }
            answer = try await transport.exchange(plain)
        }
        try check(try receive(answer), answeringRequestOf: account)
    }

    /// What ``synchronize()`` does for a store with a transport: exchange before
    /// returning if the transport can answer at once, or else schedule a ``sync()``.
    func synchronizeThroughTransport() -> Bool {
        guard let transport else { return (try? refresh()) != nil }
        do {
            try refresh()
            let (request, account, acceptsRelativeReply) = try hubRequest()
            var immediate: [UInt8]?
            do { immediate = try transport.exchangeImmediately(request) } catch {
                guard let plain = formatFourRequest(after: error, of: request, acceptsRelativeReply: acceptsRelativeReply) else { throw error }
                state.withLock { $0.requestsAcceptRelativeReply = false }
                immediate = try transport.exchangeImmediately(plain)
            }
            if let answer = immediate {
                try check(try receive(answer), answeringRequestOf: account)
                return true
            }
        } catch {
            return false
        }
        return scheduleSync()
    }

    /// Starts a ``sync()`` in the background unless one is already waiting to start.
    ///
    /// - Returns: `false` if the last scheduled sync failed (this one retries).
    private func scheduleSync() -> Bool {
        let (start, lastFailed) = scheduledSyncs.withLock { syncs in
            defer { syncs.pending = true }
            return (!syncs.pending, syncs.lastFailed)
        }
        if start {
            Task {
                let failed: Bool
                do { try await sync(); failed = false } catch { failed = true }
                scheduledSyncs.withLock { $0.lastFailed = failed }
            }
        }
        return !lastFailed
    }

    /// Throws if an answer the store ignored was not explained by an account switch
    /// during the exchange.
    private func check(_ receipt: SyncReceipt, answeringRequestOf account: AccountID) throws(ConvergeError) {
        switch receipt.ignored {
        case nil:
            return
        case .otherAccount(let answered):
            // The store switched accounts while the request travelled: the answer is stale, not wrong.
            guard self.account == account else { return }
            throw .malformed(.unexpectedMessage, "the hub answered for account \(answered), not \(account)")
        case .staleRelativeReply:
            // Another exchange of this store took a reply while this one travelled: the
            // answer is stale, not wrong, and the next exchange starts from what the store holds.
            return
        case .fromSelf, .unexpected, .reusedCounters, .otherIncarnation, .staleReport:
            throw .malformed(.unexpectedMessage, "the hub's answer is not a reply")
        }
    }

    // MARK: Sync progress

    /// The metadata record of what the hub reported (``DeviceSyncMachine/encodedProgress()``).
    static let hubProgressKey = "hub-progress"

    /// The metadata record of what the mesh machine knows of write sessions in `account`
    /// (``MeshSyncMachine/encodedSessions()``).
    static func meshSessionsKey(_ account: AccountID) -> String { "mesh-sessions:" + account.rawValue }

    /// The mesh machine of a store opened on `metadata`, knowing the write sessions recorded
    /// for `account`.
    static func meshMachine(device: ReplicaID, account: AccountID, metadata: [String: [UInt8]]) -> MeshSyncMachine {
        var machine = MeshSyncMachine(device: device, account: account)
        if let bytes = metadata[meshSessionsKey(account)] { machine.restoreSessions(from: bytes) }
        return machine
    }

    /// The hub machine of a store opened on `metadata`: resumed from the recorded progress
    /// if it is this device's and this account's, or starting from nothing reported.
    static func hubMachine(device: ReplicaID, account: AccountID, metadata: [String: [UInt8]]) -> DeviceSyncMachine {
        metadata[hubProgressKey].flatMap { DeviceSyncMachine(device: device, account: account, progress: $0) }
            ?? DeviceSyncMachine(device: device, account: account)
    }

    // MARK: The seam every transport drives

    /// The same request in format 4, to send again when the hub refused `request`, a poll or
    /// push that accepts a relative reply (a hub built before format 6 refuses it as an
    /// unsupported version); `nil` for a request in format 4 already, or any other failure
    /// (the network's: sending again at once would only wait twice as long).
    private func formatFourRequest(after error: any Error, of request: [UInt8], acceptsRelativeReply: Bool) -> [UInt8]? {
        guard acceptsRelativeReply, Self.hubRefused(error), let message = try? SyncMessage(encoded: request) else { return nil }
        switch message {
        case .poll(var poll):
            poll.acceptsRelativeReply = false
            return try? SyncMessage.poll(poll).encoded()
        case .push(var push):
            push.relativeReplyDigest = nil
            return try? SyncMessage.push(push).encoded()
        default:
            return nil
        }
    }

    /// Whether the hub refused the message of the exchange that failed with `error`, as a hub
    /// built before a format refuses it: a ``SyncTransportFailure`` that says so
    /// (``SyncTransportFailure/refusedTheMessage``), or an in-process hub's
    /// ``ConvergeError/malformed(_:)`` for a version or flag it does not know.
    private static func hubRefused(_ error: any Error) -> Bool {
        if case ConvergeError.malformed(let input)? = error as? ConvergeError {
            return input.problem == .unsupportedVersion || input.problem == .unknownTag
        }
        return (error as? any SyncTransportFailure)?.refusedTheMessage ?? false
    }

    /// The request for the hub (a push of what it lacks, or a poll), encoded, with the
    /// account it is for and whether it accepts a relative reply.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` if the push would exceed
    ///   ``SyncMessage/maximumEncodedBytes``.
    package func hubRequest() throws(ConvergeError) -> (bytes: [UInt8], account: AccountID, acceptsRelativeReply: Bool) {
        let (request, account) = state.withLock { state in
            // A push names the sessions that issued the device's counters, so the hub can tell
            // a restored or copied store that issued as many as the original; they count
            // against the request's limit.
            // At most a quarter of the request: a store opened by many short-lived processes
            // between syncs (one per command) keeps many runs.
            let sessions = state.writerSessions.latest(fittingIn: state.maximumHubRequestBytes / 4)
            let budget = state.maximumHubRequestBytes - (sessions.isEmpty ? 0 : sessions.encodedSize)
            var request = state.hubMachine.request(from: state.map, maximumPushBytes: budget)
            switch request {
            case .push(var push):
                push.writerSessions = sessions
                if !state.requestsAcceptRelativeReply { push.relativeReplyDigest = nil }
                request = .push(push)
            case .poll(var poll) where !state.requestsAcceptRelativeReply:
                poll.acceptsRelativeReply = false
                request = .poll(poll)
            default:
                break
            }
            return (request, state.account)
        }
        let accepting = switch request {
        case .poll(let poll): poll.acceptsRelativeReply
        case .push(let push): push.relativeReplyDigest != nil
        default: false
        }
        return (try request.encoded(), account, accepting)
    }

    /// The gossip for `peer` in the mesh topology: what it lacks as far as it reported.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` if it would exceed
    ///   ``SyncMessage/maximumEncodedBytes``.
    package func gossip(to peer: ReplicaID, wantsReply: Bool = true) throws(ConvergeError) -> [UInt8] {
        try SyncMessage.gossip(state.withLock { $0.gossip(to: peer, wantsReply: wantsReply) }).encoded()
    }

    /// Takes one encoded message from the hub or a peer: the state machine of its topology
    /// turns it into actions, which ``carryOut(_:in:)`` carries out.
    ///
    /// - Returns: What the store did: whether it ignored the message, and the gossip to
    ///   answer a peer with.
    /// - Throws: ``ConvergeError/malformed(_:)`` for bytes that are not a sync message, or
    ///   the storage's error; the store is then unchanged.
    @discardableResult
    package func receive(_ bytes: [UInt8]) throws(ConvergeError) -> SyncReceipt {
        try receive(try SyncMessage(encoded: bytes))
    }

    /// Takes one decoded message from the hub or a peer, as the encoded form does, for a
    /// transport that has decoded it to check where it came from.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` for a delta with counters or timestamps out
    ///   of range, or stamped too far ahead of this replica's clock (see
    ///   ``maximumClockOffsetMilliseconds``); the storage's error. The store is then unchanged.
    @discardableResult
    package func receive(_ message: SyncMessage) throws(ConvergeError) -> SyncReceipt {
        try performWrite { (state: State) throws(ConvergeError) -> WritePlan<SyncReceipt> in
            // The actions are carried out on a copy and committed in one storage transaction.
            // The machines record what the hub or a peer reported, which stays true if the
            // commit fails; they are kept only with it, which is safe too (a machine that
            // remembers less only sends more).
            var next = state
            let actions: [SyncAction]
            switch message {
            case .reply, .upToDate:
                actions = next.hubMachine.receive(state.resolvesRelativeRepliesBlindly ? message.resolvedBlindly(by: next.hubMachine) : message)
            case .gossip:
                actions = next.meshMachine.receive(message, as: state.writerID, holding: state.map.context) { key, write in
                    state.map.siblings(forKey: key).contains(write)
                }
            case .push, .poll: actions = [.ignore(.unexpected)]
            }
            // What the sender holds of this replica's writes: more than the store itself
            // proves its counters were reused (a restored or copied store). The message was
            // computed for the store's wrong context, so it is not applied; the store starts a
            // new incarnation and the next exchange brings everything.
            let received = actions.compactMap { action -> ReplicatedMap.Delta? in
                switch action {
                case .applyDelta(let delta), .applyPage(let delta, _), .joinFullState(let delta, _): return delta
                default: return nil
                }
            }
            for delta in received { try checkReceivable(delta, in: state) }
            // Writes a device adopts are received too: bounded and checked as any.
            for case .adopt(let orphans) in actions { try checkReceivable(ReplicatedMap.Delta(entries: orphans, context: VersionVector()), in: state) }
            let known = received.map(\.context)
            // The hub's record of which session issued a counter of this writer, if this
            // store's own record names another, proves the same (a copy that issued as many).
            // `reusedFrom` is the first counter shown issued twice, as far as the record shows.
            var reusedFrom: UInt64?
            var hubTipContradicted = false
            let issued = state.map.context[state.writerID]
            if case .reply(let reply) = message, reply.account == state.account, reply.device ?? state.writerID == state.writerID,
               let tip = reply.sessionTip, !state.blindToReusedCounters, state.writerSessions.contradicts(tip, issued: issued) {
                hubTipContradicted = true
            }
            // The same from a peer's gossip, which names what it recorded, or heard relayed, of
            // this writer ID's sessions (a twin under another writer ID ignores it).
            var confirmed: UInt64?
            if case .gossip(let gossip) = message, gossip.account == state.account, !state.meshMachine._ignoresWriterSessions,
               !state.blindToReusedCounters {
                let own = state.writerSessions
                if let tip = gossip.recipientTip, gossip.recipient == state.writerID {
                    if own.contradicts(tip, issued: issued) {
                        reusedFrom = min(reusedFrom ?? .max, tip.counter)
                    } else if tip.counter <= min(issued, gossip.delta.context[state.writerID]), own.session(at: tip.counter) != nil {
                        confirmed = tip.counter
                    }
                }
                // Only gossip between two devices (``SyncGossip/isBetweenTwoDevices``): the
                // folder's own check reads a broadcast's relayed records (``checkOwnHistory(_:)``).
                if gossip.isBetweenTwoDevices, let record = gossip.relayedSessions.first(where: { $0.writer == state.writerID }) {
                    let held = gossip.delta.context[state.writerID]
                    let first = own.firstDisagreement(with: record.runs, through: min(record.through, issued))
                    if let first { reusedFrom = min(reusedFrom ?? .max, first) }
                    if first == nil, record.through <= min(issued, held), own.session(at: record.through) != nil {
                        confirmed = max(confirmed ?? 0, record.through)
                    } else if let agreed = own.lastAgreement(with: record.runs, through: min(record.through, issued, held)) {
                        // The record disagrees, or reaches past what this store issued (it was
                        // restored from a backup, or copied, and the other copy went on): the
                        // counters up to the last both records name one session for are the
                        // writes the peer holds, so a new incarnation keeps them (re-stamped,
                        // the peer would hold each twice, under both writer IDs).
                        confirmed = max(confirmed ?? 0, agreed)
                    }
                }
            }
            if hubTipContradicted || reusedFrom != nil || known.contains(where: state.reusesCounters(given:)) {
                var receipt = SyncReceipt()
                receipt.startedIncarnation = true
                // Writes from the first counter issued twice on are re-stamped even if a peer
                // reported holding them: that peer may hold the other copy's.
                let restamped = try state.reincarnated(restampingFrom: reusedFrom, keepingThrough: confirmed ?? 0)
                var meshMachine = next.meshMachine
                if case .gossip = message {
                    // The machine's view of what this message changed is not carried out: keep
                    // the one before it. Withdraw the counters this store re-stamped, so peers
                    // that took its writes under them drop them and fetch the other copy's: from
                    // the first a peer's record showed issued twice, else from the first
                    // neither acknowledged nor shown issued by the same session. A peer whose
                    // record reaches beyond the counters the store issued holds the other
                    // copy's writes, and keeps them (see ``SessionRecord/holdsWithdrawn(_:)``).
                    meshMachine = state.meshMachine
                    let from = reusedFrom ?? (max(state.acknowledged, confirmed ?? 0) + 1)
                    if let withdrawn = SessionRecord.withdrawn(writer: state.writerID, runs: state.writerSessions, from: from, through: issued) {
                        meshMachine.withdraw(withdrawn)
                    }
                }
                var stored = restamped
                stored.metadata[Self.meshSessionsKey(state.account)] = meshMachine.encodedSessions()
                return WritePlan(update: .replaceAll(stored), machines: (next.hubMachine, meshMachine), result: receipt)
            }
            var change: StorageChange?
            // What a peer holds of this writer ID counts as acknowledged only as far as its
            // record of the sessions agrees with the store's: a peer that took a copy's writes
            // under these counters reports them too.
            var acknowledging = known
            if case .gossip(let gossip) = message, gossip.isBetweenTwoDevices,
               !state.meshMachine._ignoresWriterSessions, !state.blindToReusedCounters {
                acknowledging = [VersionVector([state.writerID: confirmed ?? 0])]
            }
            if let acknowledgement = state.acknowledgement(from: acknowledging) {
                change = StorageChange(clock: state.clock.latest, metadata: acknowledgement)
            }
            let (events, receipt) = try carryOut(actions, in: &next, recording: &change)
            // What the hub reported is recorded with what it sent, so a restarted device
            // resumes from it; a reply that taught nothing new writes nothing for it.
            if next.hubMachine != state.hubMachine {
                let progress = next.hubMachine.encodedProgress()
                if state.metadata[Self.hubProgressKey] != progress {
                    if change == nil { change = StorageChange(clock: state.clock.latest) }
                    change?.metadata[Self.hubProgressKey] = progress
                }
            }
            // What the mesh machine learned of write sessions is kept too, so a restarted
            // device still tells copies apart.
            if next.meshMachine != state.meshMachine {
                let sessions = next.meshMachine.encodedSessions()
                let key = Self.meshSessionsKey(state.account)
                if state.metadata[key] != sessions {
                    if change == nil { change = StorageChange(clock: state.clock.latest) }
                    change?.metadata[key] = sessions
                }
            }
            return WritePlan(update: change.map { .change($0) }, machines: (next.hubMachine, next.meshMachine), events: events, result: receipt)
        }
    }

    /// The gossip for every reader of a broadcast medium (a shared folder) that holds
    /// `published`, the context of this store's latest message there; the whole state if
    /// `nil`. See ``MeshSyncMachine/broadcast(from:after:)``.
    ///
    /// - Returns: The gossip, or `nil` if the medium already holds everything.
    package func broadcast(after published: VersionVector?) -> SyncGossip? {
        state.withLock { state in
            // Named so that this replica, reading the file back, can tell a copy of itself.
            var gossip = state.meshMachine.broadcast(from: state.map, after: published)
            gossip?.writerSessions = state.writerSessions
            // The sessions are of the writer ID, which a twin of this replica compares only
            // with its own: say which it is after a new incarnation.
            if state.writerID != replicaID { gossip?.writer = state.writerID }
            // What it kept of its previous writer ID, for a twin still under that one.
            if let kept = state.keptOfPreviousWriter { gossip?.relayedSessions = [kept] }
            return gossip
        }
    }

    // MARK: Carrying out actions

    /// Carries out a sync state machine's actions, in order, on a copy of the state: the
    /// one place that changes a store because of what a hub or a peer sent. What they
    /// change is recorded in `change`, which the store commits as one transaction.
    ///
    /// - Returns: The events to emit once the change is in place, and what to tell the caller.
    /// - Throws: ``ConvergeError/malformed(_:)`` for a delta that is not well formed.
    private func carryOut(_ actions: [SyncAction], in state: inout State,
                          recording change: inout StorageChange?) throws(ConvergeError) -> (events: [StoreEvent], receipt: SyncReceipt) {
        var events: [StoreEvent] = []
        var receipt = SyncReceipt()
        // The rest of a gossip whose only writes of a key the device adopts keeps the key,
        // with no siblings: what the adopted writes superseded is dropped.
        let adopts = actions.contains { if case .adopt = $0 { true } else { false } }
        for action in actions {
            switch action {
            case .applyDelta(let delta):
                let outcome = try state.merge(delta, treatingEmptyKeysAsDrops: adopts, reason: .serverChange, recording: &change)
                events += outcome.events
                receipt.changedKeys += outcome.visibleChanges
            case .applyPage(let delta, let partialKeys):
                let outcome = try state.merge(delta, partialKeys: Set(partialKeys), reason: .serverChange, recording: &change)
                events += outcome.events
                receipt.changedKeys += outcome.visibleChanges
            case .joinFullState(let delta, let keys):
                let outcome = try state.join(ReplicatedMap(entries: delta.entries, context: delta.context), keys: keys,
                                             reason: .initialSyncChange, recording: &change)
                if outcome.visibleChanges.isEmpty {
                    // The app is told of the initial sync even when no visible value changed.
                    events.append(.externalChange(ExternalChange(reason: .initialSyncChange, keys: [])))
                }
                events += outcome.events
                receipt.changedKeys += outcome.visibleChanges
            case .withdraw(let writer, let from):
                let outcome = try state.withdraw(writer: writer, from: from, reason: .serverChange, recording: &change)
                events += outcome.events
                receipt.changedKeys += outcome.visibleChanges
            case .adopt(let orphans):
                let (outcome, adopted) = try state.adopt(orphans, reason: .serverChange, recording: &change)
                events += outcome.events
                receipt.changedKeys += outcome.visibleChanges
                receipt.adopted += adopted
            case .collectTombstones(let frontier):
                state.collectTombstones(below: frontier, recording: &change)
            case .reportRejectedKeys(let keys):
                receipt.rejectedKeys += keys
                events.append(.externalChange(ExternalChange(reason: .quotaViolationChange, keys: keys)))
            case .answer(let peer):
                receipt.answer = (peer, .gossip(state.gossip(to: peer, wantsReply: false)))
            case .ignore(let reason):
                receipt.ignored = reason
            }
        }
        return (events, receipt)
    }
}

extension ReplicatedKeyValueStore.State {
    /// The gossip for `peer` in the mesh topology, naming the sessions that issued this
    /// writer ID's recent counters (at most a quarter of a request, as a push does).
    func gossip(to peer: ReplicaID, wantsReply: Bool) -> SyncGossip {
        meshMachine.gossip(to: peer, from: map, wantsReply: wantsReply, writer: writerID,
                           writerSessions: writerSessions.latest(fittingIn: maximumHubRequestBytes / 4))
    }
}

/// What a store did with one message it received.
package struct SyncReceipt: Sendable {
    /// Why the store ignored the message, or `nil` if it carried it out.
    package var ignored: SyncIgnoredReason?
    /// The gossip to send `peer` (which asked for an answer), in the mesh topology.
    package var answer: (peer: ReplicaID, message: SyncMessage)?
    /// The keys whose visible values changed, in UTF-8 byte order per applied change.
    package var changedKeys: [String] = []
    /// The keys the hub superseded to keep the quota (reported to the app).
    package var rejectedKeys: [String] = []
    /// The message proved this replica's counters reused: the store started a new
    /// incarnation instead of applying it (see ``ReplicatedKeyValueStore/writerID``).
    package var startedIncarnation = false
    /// The writes the store adopted (see ``SyncAction/adopt(_:)``), in the order of their new dots.
    package var adopted: [AdoptedWrite] = []

    package init() {}
}

/// A write a store adopted: an earlier writer ID's write that no copy of its store holds
/// any more, re-stamped under the store's writer ID (see ``SyncAction/adopt(_:)``).
package struct AdoptedWrite: Hashable, Sendable {
    /// The write's key.
    package var key: String
    /// Its dot as the peer held it.
    package var old: Dot
    /// Its dot now.
    package var new: Dot
}

/// The background syncs ``ReplicatedKeyValueStore/synchronize()`` schedules.
struct ScheduledSyncs: Sendable {
    /// A sync is scheduled and has not computed its request yet: it will include every
    /// write made so far, so another is not needed.
    var pending = false
    /// The last scheduled sync threw.
    var lastFailed = false
}

