/// The hub side of the protocol: the authoritative replica every device syncs with, as a
/// pure state machine (pushes and ticks in, replies out; no I/O, no clock of its own).
///
/// Per account it keeps the replicated state, the members with their acknowledged
/// contexts, and a ``StabilityTracker``. It
/// - applies each push key by key, in UTF-8 byte order, and answers a write that would
///   break the quota with a compensating write of its own, which supersedes it;
/// - collects tombstones below the safe stable frontier, which it announces;
/// - retires members silent longer than ``retirementIntervalMilliseconds`` so collection
///   can proceed, and gives a returning one a full-state reply.
public struct HubSyncMachine: Sendable {
    /// The hub's replica ID: the author of compensating writes.
    public let hubID: ReplicaID
    /// The quota the hub enforces on converged state.
    public let quota: Quota
    /// The policies that name the value visible after a compensating write (``HubCompensation/restored``).
    public let policies: MergePolicies
    /// How long a member may stay silent before it is retired.
    public let retirementIntervalMilliseconds: UInt64
    /// How far ahead of the hub's clock a pushed write's timestamp may lie: a push holding
    /// one further ahead is refused (``MalformedInput/Problem/clockAhead``), so no device's
    /// clock, wrong or hostile, drags the hub's clock along.
    public var maximumClockOffsetMilliseconds: UInt64 = 24 * 3_600 * 1_000
    /// The largest reply the hub makes: a larger delta is sent in pages, one per exchange
    /// (``ReplicatedMap/delta(for:maximumBytes:)``), and a larger full state in pages that
    /// each answer for a span of keys (``SyncReply/keys``). At most
    /// ``SyncMessage/maximumEncodedBytes``; a transport may ask for less.
    public var maximumReplyBytes = SyncMessage.maximumEncodedBytes
    var accounts: [AccountID: AccountState] = [:]
    /// No member of any account has been silent long enough to retire before this time:
    /// until then a push retires no one without a look at every member
    /// (``retireSilentMembers(nowMilliseconds:)``). Set when every member is looked at,
    /// lowered when a member is seen earlier (a clock set back), and `nil` (not known)
    /// until the first look and after a state is restored.
    var retirementDueMilliseconds: UInt64?
    /// The incarnation of ``hubID`` this machine writes compensating writes under, at
    /// least (see ``writer(of:current:session:in:)``): 1 (``hubID`` itself) for a
    /// machine that starts from nothing; a machine that loads stored states takes a number
    /// no earlier machine took (a server draws it at random).
    package var writerIncarnation: UInt64 = 1

    // Deliberately broken behaviours, switched on only by the tests and simulator runs that
    // show the checkers catch them. Behind `@_spi(Testing)`: an app never sees them.
    /// Drops quota-breaking siblings instead of superseding them with a compensating write.
    @_spi(Testing) public var _forgetsCompensatingWrites = false
    /// Collects below its own context, ignoring what the devices have acknowledged.
    @_spi(Testing) public var _collectsBeforeStable = false
    /// Supersedes every write to a key ending in "3" with a compensating write, as if it
    /// broke the quota.
    @_spi(Testing) public var _revertsKeysEndingIn3 = false
    /// Sends a page of a delta under the hub's whole context, claiming writes it leaves out.
    @_spi(Testing) public var _pagesClaimWholeContext = false
    /// Writes compensations under its current writer ID even when a push shows that it
    /// issued those counters before it was restored from an older copy.
    @_spi(Testing) public var _reusesOwnCounters = false
    /// Ignores what shows it lost state: takes no device's whole state (a repair, or a first
    /// push) as one, and sends no full state to a device that knows more than it was sent
    /// or that it does not know; values whose removal it lost then come back.
    @_spi(Testing) public var _skipsRepair = false
    /// Does not tell devices which of its own writes they know and it lost
    /// (``SyncReply/lostHubWrites``): a device that saw one then never repairs it.
    @_spi(Testing) public var _hidesLostWrites = false
    /// Broken on purpose, for tests: takes a push whose basis it does not hold (a hub
    /// restored from an older copy then loses writes for good).
    @_spi(Testing) public var _ignoresLostBasis = false
    /// A broken variant for checker tests: the hub never compares write sessions, so a
    /// restored or copied device that issued as many counters as the original goes unseen.
    @_spi(Testing) public var _ignoresWriterSessions = false

    struct AccountState: Sendable {
        var map = ReplicatedMap()
        var clock = HybridLogicalClock()
        var members: [ReplicaID: Member] = [:]
        /// Retired devices, each with the context of the last reply the hub sent it: what it
        /// may claim to have seen of other replicas when it returns.
        var retired: [ReplicaID: VersionVector] = [:]
        /// Returning devices that have not yet shown they joined a full state, with how
        /// far they got.
        var awaitingFullState: [ReplicaID: Returning] = [:]
        var stability = StabilityTracker()
        var tombstonesCollected = 0
        var compensations = 0
        /// The frontier of the last collection, whose inputs ``acknowledgedMinimum`` holds:
        /// nothing to redo while the members' acknowledgements and the hub's context are theirs.
        var lastFrontier: VersionVector?
        /// The minimum of the acknowledgements collection last observed, kept by difference
        /// so that a push costs what changed, not every member's every replica. Not stored:
        /// rebuilt at the first collection after a load.
        var acknowledgedMinimum = AcknowledgedMinimum()
        /// The writer ID of this machine's compensating writes; `nil` until its first one
        /// since the state was loaded from storage (see ``HubSyncMachine/writer(of:current:session:in:)``).
        /// Not stored: a copy of the state loaded again may be older than writes made from it.
        var writer: ReplicaID?
        /// For each device, the write sessions that issued its counters (see
        /// ``WriterSessions``), as its pushes named them, up to the highest it holds.
        var sessions: [ReplicaID: KnownSessions] = [:]

        /// What each member acknowledged, and the hub's own context under `hub`: what the
        /// kept minimum (``acknowledgedMinimum``) is the minimum of.
        func acknowledgements(hub: ReplicaID) -> [ReplicaID: VersionVector] {
            var acknowledged: [ReplicaID: VersionVector] = [hub: map.context]
            for (device, member) in members { acknowledged[device] = member.acknowledged }
            return acknowledged
        }
    }

    /// A device's write sessions as the hub knows them.
    struct KnownSessions: Hashable, Sendable {
        var runs: WriterSessions
        /// The highest counter of the device the runs are known to reach.
        var through: UInt64

        /// The session that issued ``through``.
        var tip: WriterSessions.Tip? {
            runs.session(at: through).map { WriterSessions.Tip(counter: through, session: $0) }
        }
    }

    /// A returning device's way through the hub's full state.
    struct Returning: Hashable, Sendable {
        /// The hub's context when it last sent the device a full state or a page of one;
        /// empty until it has sent one since the device returned.
        var sent = VersionVector()
        /// The device joined the pages of every key up to this one (`nil`: none yet).
        var joinedThrough: String?
        /// The last key of the page last sent, which the device acknowledges it by; `nil`
        /// when it was the whole state or its last page.
        var lastSentThrough: String?
    }

    struct Member: Sendable {
        var acknowledged: VersionVector
        var lastSeenMilliseconds: UInt64
        /// What the last reply to this member carried: its context and frontier.
        var lastReplyContext = VersionVector()
        var lastReplyFrontier = VersionVector()
    }

    /// A hub with no account, member or state yet.
    ///
    /// - Parameters:
    ///   - hubID: The replica ID of the hub's own (compensating) writes.
    ///   - quota: The quota the hub enforces on converged state.
    ///   - policies: How the hub reads a key when it restores its previous value.
    ///   - retirementIntervalMilliseconds: How long a member may stay silent before it is
    ///     retired (30 days by default).
    public init(hubID: ReplicaID = "hub", quota: Quota = .iCloud, policies: MergePolicies = MergePolicies(),
                retirementIntervalMilliseconds: UInt64 = 30 * 24 * 3_600 * 1_000) {
        self.hubID = hubID
        self.quota = quota
        self.policies = policies
        self.retirementIntervalMilliseconds = retirementIntervalMilliseconds
    }

    /// Handles one push and returns the reply for its device.
    ///
    /// - Complexity: O(*k* · *s*) for the keys of the push, plus O(*n*) to compute the
    ///   reply and collect tombstones.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` for a push the hub refuses (see
    ///   ``check(_:nowMilliseconds:)``); the hub is then unchanged.
    public mutating func receive(_ push: SyncPush, nowMilliseconds: UInt64) throws(ConvergeError) -> SyncReply {
        var compensations: [HubCompensation] = []
        return try receive(push, nowMilliseconds: nowMilliseconds, compensations: &compensations)
    }

    /// Refuses a push the hub must not apply: one from a device that claims the hub's own
    /// replica ID, or one holding a write whose timestamp lies further ahead of the hub's
    /// physical clock than ``maximumClockOffsetMilliseconds``.
    ///
    /// What a push claims to have seen needs no check: the hub believes a device's context
    /// for other replicas only up to what it has sent that device (see
    /// ``receive(_:nowMilliseconds:compensations:)->SyncReply``).
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` naming what is refused.
    public func check(_ push: SyncPush, nowMilliseconds: UInt64) throws(ConvergeError) {
        guard push.device.base != hubID.base else {
            throw .malformed(.unexpectedMessage, "a push from device \(push.device), which is the hub's own replica ID")
        }
        try push.delta.checkTimestamps(notAfter: nowMilliseconds.addingSaturating(maximumClockOffsetMilliseconds))
        // Incarnations are bounded as counters are, so a new one is always one past the last.
        let named = push.delta.context.entries.lazy.map(\.replica).filter { $0.incarnationNumber > Dot.maximumCounter }
        if let replica = named.min() {
            throw .malformed(.outOfRange, "a push naming \(replica), whose incarnation exceeds the maximum \(Dot.maximumCounter)")
        }
    }

    /// Handles one push, returns the reply, and appends the compensating writes it made
    /// to `compensations` (for checkers and metrics that count every resolution).
    ///
    /// The push's context is believed for the device's own writes, and for other replicas'
    /// only up to what the hub has sent that device (in the hub topology a device learns
    /// others' writes only from the hub), raised to cover the writes the push carries: a
    /// device cannot claim to have seen writes it never received, and so suppress them.
    /// Writes of the device's older incarnations it carries raise it only up to the first
    /// whose dot the hub holds as another write (a counter the device reused; see
    /// `withoutReusedDots(_:from:holding:)`), and are taken only below it. A
    /// device that claims writes the hub holds and never sent it learnt them from a hub
    /// that is lost (this one before it was restored from an older copy): it gets a full
    /// state, after which its claims are believed.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` for a push the hub refuses (see
    ///   ``check(_:nowMilliseconds:)``); the hub is then unchanged.
    public mutating func receive(_ push: SyncPush, nowMilliseconds: UInt64,
                                 compensations: inout [HubCompensation]) throws(ConvergeError) -> SyncReply {
        try receive(push, nowMilliseconds: nowMilliseconds, compensations: &compensations, contextIsCurrent: true)
    }

    /// Handles one push, as ``receive(_:nowMilliseconds:compensations:)->SyncReply`` does.
    ///
    /// - Parameter contextIsCurrent: Whether the push's context is what the device holds
    ///   (of what the hub has sent it), as a push's is when it is made; `false` for a poll
    ///   whose digest does not match the last reply, which stands for a push of the last
    ///   context the device acknowledged, possibly lower. A delta computed for a lower
    ///   context is safe whole, but not in pages: a page stops a writer below writes the
    ///   device may hold, and a key of the page whose siblings replaced one of them would
    ///   leave the device holding it beside them, with no later delta carrying the key
    ///   again. So a reply that would be a page asks for a push instead (a page of nothing
    ///   under that context, more to come), whose context is the device's own.
    private mutating func receive(_ push: SyncPush, nowMilliseconds: UInt64, compensations: inout [HubCompensation],
                                  contextIsCurrent: Bool) throws(ConvergeError) -> SyncReply {
        try check(push, nowMilliseconds: nowMilliseconds)
        if !_ignoresLostBasis, var reply = answerToLostBasis(push) {
            reply.device = push.device
            return reply
        }
        if !_ignoresWriterSessions, var reply = answerToReusedCounters(push) {
            reply.device = push.device
            return reply
        }
        retireSilentMembers(nowMilliseconds: nowMilliseconds)
        // Taken out while it changes (nothing below throws or returns early), so that its map
        // is not shared with the dictionary and changes in place instead of being copied whole.
        var state = accounts.removeValue(forKey: push.account) ?? AccountState()
        let sent = state.members[push.device]?.lastReplyContext ?? state.retired[push.device] ?? VersionVector()
        // A device that knows of others' writes the hub holds and never sent it learnt them
        // from a hub that is lost (this one before it was restored from an older copy, or
        // another hub under the account). It may hold values whose removal it never saw, and
        // only a full state, which drops what the hub has seen and no longer has, tells it.
        // Once it has it, its claims are believed, and it repairs the hub
        // (``DeviceSyncMachine/repairsHub``).
        if !_skipsRepair && state.awaitingFullState[push.device] == nil && state.retired[push.device] == nil
            && Self.knowsMoreThanSent(push.delta.context, device: push.device, sent: sent, holding: state.map.context) {
            state.awaitingFullState[push.device] = Returning()
        }
        let writer = _reusesOwnCounters ? state.writer ?? Self.latestWriter(of: hubID.base, in: state.map.context)
            : Self.writer(of: hubID.base, current: state.writer, session: writerIncarnation, in: state.map.context)
        // What the device claims to have seen: a full state is computed within it (see below).
        let claimed = push.delta.context
        var push = push
        push.delta = Self.withoutReusedDots(push.delta, from: push.device, holding: state.map)
        push.delta.context = Self.believable(push.delta, from: push.device, sent: sent)
        let staleKeys = Self.keysHoldingDropped(push.delta, by: state.map)
        // A key the hub holds nothing of cannot be answered with a delta: a full state tells
        // the device (see ``holdsACollectedKey(_:by:)``).
        if !_skipsRepair && state.awaitingFullState[push.device] == nil && Self.holdsACollectedKey(push.delta, by: state.map) {
            state.awaitingFullState[push.device] = Returning()
        }
        if state.retired.removeValue(forKey: push.device) != nil { state.awaitingFullState[push.device] = Returning() }
        // A returning device keeps getting the full state until it acknowledges one it was
        // sent after its return. Its context cannot show that: it may cover the hub's
        // context while the device still holds tombstones the hub collected meanwhile. A
        // full state too large for one message goes in pages, each acknowledged in turn.
        var returning: Returning?
        if var progress = state.awaitingFullState[push.device] {
            let sentOne = !progress.sent.isEmpty || state.map.context.isEmpty
            if push.acknowledgesFullState && sentOne && push.acknowledgedThrough == progress.lastSentThrough {
                if let through = push.acknowledgedThrough { progress.joinedThrough = through }
                returning = push.acknowledgedThrough == nil ? nil : progress
            } else {
                returning = progress
            }
            state.awaitingFullState[push.device] = returning
        }
        var made: [HubCompensation] = []
        // Whether the push dropped siblings the hub held and brought nothing new to their
        // keys: devices that hold those siblings would never learn it from a delta.
        var droppedOnly = false
        // A write of the hub's own that it lost in a restore, brought back by a device that
        // still holds it: another device may have seen it replaced, been told it was lost
        // (``SyncReply/lostHubWrites``) and repaired already, and would never drop it now.
        let bringsBackALostWrite = !_skipsRepair && push.delta.entries.values.contains { siblings in
            siblings.contains { $0.dot.replica.base == hubID.base && !state.map.context.contains($0.dot) }
        }
        if let span = push.fullStateKeys {
            droppedOnly = !_skipsRepair && repair(&state, with: push.delta, keys: span)
        } else {
            made = applyEnforcingQuota(push.delta, partialKeys: Set(push.partialKeys), account: push.account, writer: writer,
                                       to: &state, nowMilliseconds: nowMilliseconds, droppedOnly: &droppedOnly)
            if !made.isEmpty && state.map.context[writer] > 0 { state.writer = writer }
            // A whole push from a device that starts from nothing the hub reported is the
            // device's whole state: joined as one, it drops what the device has seen and no
            // longer has (a value whose removal's tombstone it collected, when the hub is an
            // older copy than the one it synced with).
            if push.basis.isEmpty && !push.moreToCome && !_skipsRepair && repair(&state, with: push.delta, keys: .all) {
                droppedOnly = true
            }
        }
        if (droppedOnly || bringsBackALostWrite) && !_skipsRepair {
            // Only a device that learnt from a hub that is lost knows more than the hub of
            // what is gone: the other devices get a full state (again, if one was on its way),
            // and repair the hub again after it (dropping a lost write they saw replaced).
            for member in state.members.keys where member != push.device { state.awaitingFullState[member] = Returning() }
        }
        recordSessions(of: push, in: &state)
        compensations += made
        let rejected = made.map(\.key)
        // A returning device starts from what the hub sent it before it was retired. One
        // page of a device's changes acknowledges nothing new: the device may still hold
        // writes concurrent with a tombstone its context covers.
        var member = state.members[push.device] ?? Member(acknowledged: VersionVector(), lastSeenMilliseconds: nowMilliseconds,
                                                          lastReplyContext: sent)
        if !push.moreToCome && push.fullStateKeys == nil { member.acknowledged = push.delta.context }
        state.members[push.device] = member
        state.members[push.device]!.lastSeenMilliseconds = nowMilliseconds
        retirementDueMilliseconds = retirementDueMilliseconds.map { min($0, nowMilliseconds.addingSaturating(retirementIntervalMilliseconds)) }
        let frontier = collect(&state, changed: [push.device])
        let lost = _hidesLostWrites ? VersionVector() : Self.lostWrites(of: hubID.base, claimed: claimed, holding: state.map.context)
        let budget = Self.deltaBudget(maximumReplyBytes, frontier: frontier, rejectedKeys: rejected, account: push.account,
                                      lostHubWrites: lost, sessionTip: state.sessions[push.device]?.tip, device: push.device)
        var reply: SyncReply
        // A full state goes in answer to a whole push: its pages are computed within the
        // context the push shows the device holds, and a page of the device's changes shows
        // less (the device could keep siblings beyond it that the hub dropped).
        if var progress = returning, !push.moreToCome {
            // Within what the device claims, even beyond what the hub believes: a page then
            // drops every sibling the device claims to have seen that the hub has seen and no
            // longer holds (a device that learnt from a lost hub may hold such siblings), and
            // tells the device nothing it could not have fetched.
            let (delta, keys) = Self.fullState(of: state.map, after: progress.joinedThrough, within: claimed, maximumBytes: budget)
            progress.sent = state.map.context
            progress.lastSentThrough = keys.through
            state.awaitingFullState[push.device] = progress
            reply = SyncReply(account: push.account, kind: .fullState, delta: delta, stableFrontier: frontier, rejectedKeys: rejected, keys: keys)
        } else {
            let basis = push.moreToCome ? Self.replyBasis(push.delta.context, device: push.device, holding: state.map.context) : push.delta.context
            // The repaired span's keys go in the reply too, which the budget does not count.
            let span = push.fullStateKeys.map { ($0.after?.utf8.count ?? 0) + ($0.through?.utf8.count ?? 0) + 8 } ?? 0
            let answers = _skipsRepair ? [] : staleKeys
            let whole = state.map.delta(for: basis, maximumBytes: budget)
            var page = whole
            // The answers to keys holding dropped writes come before what the device lacks, in
            // up to half the room: the device pushes such a key again only when it repairs the
            // hub again, or writes it, while the rest of the delta comes in the next pages
            // (`quota-pressure.json` in 300-byte messages, seed 124: a complete reply without
            // room for the answer left a device holding a replaced write for good). When the
            // first key the device lacks leaves no room for them, they go alone, in a page
            // under the context the push claimed. Not when the push's context may no longer be
            // what the device holds: an incomplete reply then is an empty page asking for a
            // push. A device that lacks nothing gets the answers that fit in a complete reply.
            // An answer larger than half the room goes alone.
            let answersCost = Self.bytesBound(ofLeading: answers, in: state.map, fitting: (budget - span) / 2)
            let needed = answersCost > 0 ? answersCost : Self.bytesBound(ofLeading: answers, in: state.map, fitting: budget - span)
            if needed > 0 && contextIsCurrent && !page.delta.entries.isEmpty
                && ReplicatedMap.deltaBytesBound(entries: page.delta.entries, context: page.delta.context) + needed > budget - span {
                if answersCost > 0 { page = state.map.delta(for: basis, maximumBytes: budget - span - answersCost) }
                if answersCost == 0
                    || ReplicatedMap.deltaBytesBound(entries: page.delta.entries, context: page.delta.context) + answersCost > budget - span {
                    var alone = ReplicatedMap.Delta(entries: [:], context: basis.intersection(state.map.context))
                    alone.entries = Self.adding(answers, of: state.map, to: alone, maximumBytes: budget - span)
                    // None of them under the claimed context: an empty page would ask for a push.
                    page = alone.entries.isEmpty ? whole : (alone, false, [])
                }
            }
            if !page.complete && !contextIsCurrent { page = (ReplicatedMap.Delta(entries: [:], context: basis), false, []) }
            if _pagesClaimWholeContext { page.delta.context = state.map.context }
            if page.complete || !page.delta.entries.isEmpty {
                page.delta.entries = Self.adding(answers, of: state.map, to: page.delta, maximumBytes: budget - span)
            }
            reply = SyncReply(account: push.account, kind: .delta, delta: page.delta, stableFrontier: frontier, rejectedKeys: rejected,
                              moreToCome: !page.complete, partialKeys: page.partialKeys)
        }
        reply.repairedKeys = push.fullStateKeys
        reply.lostHubWrites = lost
        reply.sessionTip = state.sessions[push.device]?.tip
        reply.device = push.device
        // A page (a reply under less than the hub's context) announces no frontier: the device
        // decides what to collect from its own siblings, and a page may leave out a live
        // sibling concurrent with a tombstone the frontier covers.
        let complete = reply.delta.context == state.map.context
        if !complete { reply.stableFrontier = VersionVector() }
        // What the hub has sent the device: the union of its replies' contexts (a page's is
        // lower than the hub's), which is what the device's own record of them is too.
        state.members[push.device]!.lastReplyContext.formUnion(reply.delta.context)
        if complete { state.members[push.device]!.lastReplyFrontier = frontier }
        accounts[push.account] = state
        _checkInvariants(of: push.account)
        return reply
    }

    /// The answer to a push whose device believes the hub holds more than it does
    /// (``SyncPush/basis``): a hub restored from an older copy, or another hub under the
    /// same account. The push was computed for that belief and leaves out what it covers;
    /// taking it would raise the hub's context over writes it does not hold (the device's
    /// own, which the hub believes, and others' the push carries), and they would never be
    /// sent again. It is not applied; the reply is what the device lacks, under the hub's
    /// context, which tells the device to push again from there
    /// (``DeviceSyncMachine/receive(_:)``). Nothing changes.
    func answerToLostBasis(_ push: SyncPush) -> SyncReply? {
        let state = accounts[push.account] ?? AccountState()
        guard !push.basis.isDominated(by: state.map.context) else { return nil }
        let sent = state.members[push.device]?.lastReplyContext ?? state.retired[push.device] ?? VersionVector()
        let believed = Self.believable(push.delta, from: push.device, sent: sent)
        let budget = Self.deltaBudget(maximumReplyBytes, frontier: VersionVector(), rejectedKeys: [], account: push.account, device: push.device)
        let page = state.map.delta(for: push.moreToCome ? Self.replyBasis(believed, device: push.device, holding: state.map.context) : believed, maximumBytes: budget)
        return SyncReply(account: push.account, kind: .delta, delta: page.delta, stableFrontier: VersionVector(), rejectedKeys: [],
                         moreToCome: !page.complete, partialKeys: page.partialKeys,
                         lostHubWrites: _hidesLostWrites ? VersionVector()
                             : Self.lostWrites(of: hubID.base, claimed: push.delta.context, holding: state.map.context))
    }

    /// The answer to a push whose write sessions name another session for a counter of the
    /// device than the one that issued it to the hub: the device's counters were reused,
    /// and its writes under them would be taken for the ones the hub holds (and siblings
    /// its context claims dropped). It is not applied; the reply carries no write, only the
    /// hub's tip (``SyncReply/sessionTip``) and, as its context, how far the hub holds the
    /// device's writes. A push without sessions that reach the hub's record is not
    /// checked. Nothing changes.
    func answerToReusedCounters(_ push: SyncPush) -> SyncReply? {
        guard let known = accounts[push.account]?.sessions[push.device],
              push.writerSessions.disagrees(with: known.runs, through: min(known.through, push.delta.context[push.device])) else {
            return nil
        }
        // The context names how far the hub holds the device's writes, which shows a device
        // that issued fewer counters than that its reuse (the tip shows one that issued as many).
        var reply = SyncReply(account: push.account, kind: .delta,
                              delta: ReplicatedMap.Delta(entries: [:], context: VersionVector([push.device: known.through])),
                              stableFrontier: VersionVector(), rejectedKeys: [])
        reply.sessionTip = known.tip
        return reply
    }

    /// Whether the hub takes nothing of `push` because its write sessions show the device's
    /// counters reused (``answerToReusedCounters(_:)``): for the simulator's model, which
    /// cannot see sessions.
    package func refusesForReusedCounters(_ push: SyncPush) -> Bool {
        !_ignoresWriterSessions && answerToReusedCounters(push) != nil
    }

    /// Records the sessions that issued the pushing device's counters, when the push names
    /// them and reaches as far as the hub's record.
    private func recordSessions(of push: SyncPush, in state: inout AccountState) {
        let own = push.delta.context[push.device]
        let known = state.sessions[push.device]
        guard own > 0, push.writerSessions.session(at: own) != nil, state.map.context[push.device] == own,
              own >= known?.through ?? 0 else { return }
        state.sessions[push.device] = KnownSessions(runs: push.writerSessions.continuing(known?.runs ?? WriterSessions(), through: known?.through ?? 0), through: own)
    }

    /// The writes of the hub's own ID `hub` (any incarnation) that a device claims and the
    /// hub's context `holding` does not cover (``SyncReply/lostHubWrites``).
    static func lostWrites(of hub: ReplicaID, claimed: VersionVector, holding: VersionVector) -> VersionVector {
        var lost = VersionVector()
        for (replica, counter) in claimed.sortedEntries where replica.isIncarnation(of: hub) && counter > holding[replica] {
            lost.raise(replica, to: counter)
        }
        return lost
    }

    /// Handles a request (a push or a poll) and returns the message to answer with: a
    /// compact ``SyncMessage/upToDate(_:)`` when a polling device already holds everything,
    /// including the stable frontier the hub last sent it, and nothing moved since; a reply
    /// otherwise. A request that takes a relative reply (``SyncPoll/acceptsRelativeReply``,
    /// ``SyncPush/relativeReplyDigest``) from a device that holds exactly what the hub last
    /// sent it (the digests match) gets one, when the reply carries the hub's whole context.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` for a message that is not a push or a poll
    ///   (``MalformedInput/Problem/unexpectedMessage``), or a push the hub refuses (see
    ///   ``check(_:nowMilliseconds:)``); the hub is then unchanged.
    public mutating func receive(_ request: SyncMessage, nowMilliseconds: UInt64,
                                 compensations: inout [HubCompensation]) throws(ConvergeError) -> SyncMessage {
        switch request {
        case .push(let push):
            // What the hub last sent the device, if the push takes a reply relative to it and the
            // device holds exactly that (kept only then: the record changes below).
            let previous = push.relativeReplyDigest.flatMap { digest in
                accounts[push.account]?.members[push.device].map { (context: $0.lastReplyContext, frontier: $0.lastReplyFrontier) }
                    .flatMap { SyncPoll.digest(context: $0.context, stableFrontier: $0.frontier) == digest ? $0 : nil }
            }
            let reply = try receive(push, nowMilliseconds: nowMilliseconds, compensations: &compensations)
            if let previous, let digest = push.relativeReplyDigest,
               let relative = relativeAnswer(reply, account: push.account, holding: previous, digest: digest) {
                return .reply(relative)
            }
            return .reply(reply)
        case .poll(let poll):
            // A returning device whose full state must go in pages: each page is computed for
            // the context the device holds, which a poll does not say (a retired device's is
            // unknown), so a page computed now could leave stale siblings behind. Ask for a
            // push instead (a page of nothing, more to come), changing nothing.
            // A device the hub does not know, that polls, learnt what it holds from a hub that
            // is lost (see receive(_:nowMilliseconds:compensations:)): it may hold values
            // whose removal it never saw. Ask for a push too, which shows what it knows.
            if let state = accounts[poll.account] {
                let unknown = !_skipsRepair && !state.map.context.isEmpty && state.members[poll.device] == nil && state.retired[poll.device] == nil
                let budget = Self.deltaBudget(maximumReplyBytes, frontier: state.map.context, rejectedKeys: [], account: poll.account,
                                              device: poll.device)
                let pagedFullState = (state.retired[poll.device] != nil || state.awaitingFullState[poll.device] != nil)
                    && ReplicatedMap.deltaBytesBound(entries: state.map.entries, context: state.map.context) > budget
                if unknown || pagedFullState {
                    var reply = SyncReply(account: poll.account, kind: .delta, delta: ReplicatedMap.Delta(entries: [:], context: VersionVector()),
                                          stableFrontier: VersionVector(), rejectedKeys: [], moreToCome: true)
                    reply.device = poll.device
                    return .reply(reply)
                }
            }
            // The poll stands for a push of nothing, acknowledging the context it names: the
            // context of the last reply if the digest matches, or else the last one known.
            let member = accounts[poll.account]?.members[poll.device]
            let previous = member.map { (context: $0.lastReplyContext, frontier: $0.lastReplyFrontier) }
            var acknowledged = member?.acknowledged ?? VersionVector()
            let holdsLastReply = previous.map { SyncPoll.digest(context: $0.context, stableFrontier: $0.frontier) == poll.digest } ?? false
            if let previous, holdsLastReply { acknowledged = previous.context }
            // Its basis is what it acknowledges: it is no device's whole state.
            let push = SyncPush(account: poll.account, device: poll.device, delta: ReplicatedMap.Delta(entries: [:], context: acknowledged),
                                basis: acknowledged)
            let reply = try receive(push, nowMilliseconds: nowMilliseconds, compensations: &compensations, contextIsCurrent: holdsLastReply)
            if let previous, reply.kind == .delta, reply.delta.entries.isEmpty, reply.rejectedKeys.isEmpty,
               holdsLastReply, reply.delta.context == previous.context,
               reply.stableFrontier == previous.frontier {
                return .upToDate(poll.account)
            }
            if let previous, holdsLastReply, poll.acceptsRelativeReply,
               let relative = relativeAnswer(reply, account: poll.account, holding: previous, digest: poll.digest) {
                return .reply(relative)
            }
            return .reply(reply)
        case .reply, .gossip, .upToDate:
            throw .malformed(.unexpectedMessage, "the hub accepts only pushes and polls")
        }
    }

    /// `reply`, for a device that holds exactly what the hub last sent it (`holding`, whose
    /// digest its request named), written relative to that: only what changed, when the reply
    /// carries the hub's whole context (not a page, nor the answer to a lost basis or to
    /// reused counters); `nil` otherwise (see ``SyncReply/relative(toContext:stableFrontier:digest:)``).
    private func relativeAnswer(_ reply: SyncReply, account: AccountID, holding: (context: VersionVector, frontier: VersionVector),
                                digest: UInt64) -> SyncReply? {
        guard reply.delta.context == accounts[account]?.map.context else { return nil }
        return reply.relative(toContext: holding.context, stableFrontier: holding.frontier, digest: digest)
    }

    /// The bytes left for a reply's delta in `maximumBytes`, once its other fields (the
    /// frontier, the rejected keys, the account, the device answered, the session tip, the
    /// header) are counted.
    static func deltaBudget(_ maximumBytes: Int, frontier: VersionVector, rejectedKeys: [String], account: AccountID,
                            lostHubWrites: VersionVector = VersionVector(), sessionTip: WriterSessions.Tip? = nil,
                            device: ReplicaID? = nil) -> Int {
        var writer = BinaryWriter()
        var vectors = frontier.encodedSize
        if !lostHubWrites.isEmpty { vectors += lostHubWrites.encodedSize }
        if let sessionTip {
            writer.writeVarint(sessionTip.counter)
            writer.writeFixed64(sessionTip.session)
        }
        writer.writeString(account.rawValue)
        if let device { writer.writeString(device.rawValue) }
        for key in rejectedKeys { writer.writeString(key) }
        return max(0, min(maximumBytes, SyncMessage.maximumEncodedBytes) - vectors - writer.bytes.count - 32)
    }

    /// The keys of `delta` (a device's push) whose siblings are every sibling the hub holds
    /// of the key and more that the hub has seen and no longer holds: the device holds a
    /// write the hub saw replaced or removed beside what replaced it, and no delta will tell
    /// it, since its context covers both.
    ///
    /// A page of a reply computed for less than the device holds leaves it so: a page
    /// carries a key under a context lowered below a write of another replica the device
    /// already held, and the device keeps that write beside the page's, which saw it
    /// (`quota-pressure.json` in 300-byte messages, seeds 55 and 126: a device back from
    /// another account pushed its state in pages). The device pushes such a key again when
    /// it repairs the hub, or writes it.
    ///
    /// Only when the device holds all the hub holds of the key: a device that holds other
    /// writes under dots the hub has seen (a store restored from a backup, reusing counters
    /// its sessions did not show reused) would drop its own write and not take the hub's,
    /// its context covering both, and hold nothing of the key.
    static func keysHoldingDropped(_ delta: ReplicatedMap.Delta, by map: ReplicatedMap) -> [String] {
        delta.entries.keys.sortedByUTF8().filter { key in
            let held = map.siblings(forKey: key)
            let pushed = delta.entries[key]!
            let holdsAllTheHubHolds = held.allSatisfy { mine in pushed.contains { $0.dot == mine.dot } }
            return holdsAllTheHubHolds
                && pushed.contains { sibling in map.context.contains(sibling.dot) && !held.contains { $0.dot == sibling.dot } }
        }
    }

    /// Whether `delta` (a device's push) holds a value of a key the hub holds nothing of,
    /// every sibling of which the hub has seen: the hub saw the value replaced or removed,
    /// and collected the key's tombstones since. The device holds it beside what replaced
    /// it (a page of a reply computed for less than it held left it so), or alone, under a
    /// context covering all of it, and no delta will tell it: a delta cannot carry a key
    /// with no siblings. A full state does: it drops every sibling the device has seen that
    /// the hub has seen and no longer holds (`quota-pressure.json` in 300-byte messages,
    /// seed 149: a device held a value beside two removals the hub had collected, and never
    /// converged).
    ///
    /// Tombstones alone are left: the device collects them itself once every member has
    /// seen them.
    ///
    /// Not for a key one of whose dots names a write the hub holds under another key: the
    /// device reused a counter (a store restored from a backup whose sessions did not show
    /// it), and a full state would drop its write without giving it the hub's. The device
    /// then keeps its write, which no other replica takes (the hub's context covers its
    /// dot): a divergence the device's next repair shows, instead of a write dropped
    /// silently. Only write sessions detect the reuse itself.
    ///
    /// - Complexity: O(*p*) in the push's siblings; O(*n*) in the hub's siblings more when a
    ///   key qualifies.
    static func holdsACollectedKey(_ delta: ReplicatedMap.Delta, by map: ReplicatedMap) -> Bool {
        let collected = delta.entries.filter { key, siblings in
            map.siblings(forKey: key).isEmpty && siblings.contains { !$0.isTombstone }
                && siblings.allSatisfy { map.context.contains($0.dot) }
        }
        guard !collected.isEmpty else { return false }
        var dots: Set<Dot> = []
        for siblings in collected.values { for sibling in siblings { dots.insert(sibling.dot) } }
        var heldElsewhere: Set<Dot> = []
        for siblings in map.entries.values { for sibling in siblings where dots.contains(sibling.dot) { heldElsewhere.insert(sibling.dot) } }
        return collected.values.contains { siblings in !siblings.contains { heldElsewhere.contains($0.dot) } }
    }

    /// `reply`'s entries with the hub's siblings of `keys` (see
    /// ``keysHoldingDropped(_:by:)``) added, in order, while they fit in `maximumBytes`:
    /// each drops at the device what the hub dropped and the reply's context covers.
    ///
    /// A key goes in a page too (a reply under less than the hub's context) when the page's
    /// context covers all the hub holds of it: the page then carries the key as the hub
    /// held it when it had seen no more than the page, as any whole key of a page does.
    ///
    /// Left out: a key the hub holds nothing of (it collected the key's tombstones; see
    /// ``holdsACollectedKey(_:by:)``); and, with the device keeping the replaced write, a
    /// key the page's context does not cover and keys past the budget (a device pushes the
    /// key again only when it repairs the hub again, or writes it).
    static func adding(_ keys: [String], of map: ReplicatedMap, to reply: ReplicatedMap.Delta, maximumBytes: Int) -> [String: [Sibling]] {
        var entries = reply.entries
        var left = maximumBytes - ReplicatedMap.deltaBytesBound(entries: entries, context: reply.context)
        for key in keys where entries[key] == nil {
            let siblings = map.siblings(forKey: key)
            guard !siblings.isEmpty, siblings.allSatisfy({ reply.context.contains($0.dot) }) else { continue }
            let cost = ReplicatedMap.entryBytesBound(key: key, siblings: siblings)
            guard cost <= left else { break }
            entries[key] = siblings
            left -= cost
        }
        return entries
    }

    /// At most the bytes the hub's entries of the first of `keys` take in a delta, as many
    /// as fit in `room` in order (as ``adding(_:of:to:maximumBytes:)`` adds them), a key it
    /// holds nothing of counting nothing.
    static func bytesBound(ofLeading keys: [String], in map: ReplicatedMap, fitting room: Int) -> Int {
        var total = 0
        for key in keys {
            let siblings = map.siblings(forKey: key)
            guard !siblings.isEmpty else { continue }
            let cost = ReplicatedMap.entryBytesBound(key: key, siblings: siblings)
            guard total + cost <= room else { break }
            total += cost
        }
        return total
    }

    /// The full state for a returning device that has joined the pages up to `after`:
    /// all of it when it fits in `maximumBytes`, else the next page, under the context
    /// `within` (what the device holds) shares with the hub's.
    static func fullState(of map: ReplicatedMap, after: String?, within: VersionVector, maximumBytes: Int) -> (ReplicatedMap.Delta, KeySpan) {
        if ReplicatedMap.deltaBytesBound(entries: map.entries, context: map.context) <= maximumBytes { return (map.asDelta, .all) }
        return map.fullStatePage(after: after, within: within, maximumBytes: maximumBytes)
    }

    /// Joins a device's whole state for the keys of `span` (a repairing push,
    /// ``SyncPush/fullStateKeys``): drops, in those keys, every sibling the page's context
    /// (as believed) covers and the page lacks. Only what the hub's own context covers is
    /// taken, so a repair adds nothing and needs no quota check.
    ///
    /// - Returns: Whether anything was dropped.
    private func repair(_ state: inout AccountState, with page: ReplicatedMap.Delta, keys span: KeySpan) -> Bool {
        let context = page.context.intersection(state.map.context)
        var entries: [String: [Sibling]] = [:]
        for (key, siblings) in page.entries {
            let covered = siblings.filter { context.contains($0.dot) }
            if !covered.isEmpty { entries[key] = covered }
        }
        // The page's entries are covered by its context, and its context by the hub's.
        guard let whole = try? ReplicatedMap(entries: entries, context: context) else { return false }
        return !state.map.join(whole, keys: span).isEmpty
    }

    /// Whether a push's `context` holds writes of other replicas (not incarnations of the
    /// device itself) that the hub holds (`holding`, its context) and has not sent the
    /// device (`sent`).
    ///
    /// - Complexity: O(*r*) in the replicas of `context` and `sent` (a search per replica of
    ///   `context` when it is far smaller), plus a search of `holding` per replica whose
    ///   counter in `context` is above what was sent.
    static func knowsMoreThanSent(_ context: VersionVector, device: ReplicaID, sent: VersionVector, holding: VersionVector) -> Bool {
        func beyondSent(_ replica: ReplicaID, _ counter: UInt64, sent: UInt64) -> Bool {
            counter > sent && min(counter, holding[replica]) > sent && replica.base != device.base
        }
        if context.isSmall(beside: sent) {
            return context.entries.contains { replica, counter in beyondSent(replica, counter, sent: sent[replica]) }
        }
        let sentEntries = sent.entries
        var next = 0
        for (replica, counter) in context.entries {
            while next < sentEntries.count && sentEntries[next].replica < replica { next += 1 }
            let sentCounter = next < sentEntries.count && sentEntries[next].replica == replica ? sentEntries[next].counter : 0
            if beyondSent(replica, counter, sent: sentCounter) { return true }
        }
        return false
    }

    /// The latest incarnation of `base` that `context` holds (`base` itself if none).
    static func latestWriter(of base: ReplicaID, in context: VersionVector) -> ReplicaID {
        var latest: UInt64 = 1
        for (replica, _) in context.entries where replica.isIncarnation(of: base) { latest = max(latest, replica.incarnationNumber) }
        return base.incarnation(latest)
    }

    /// The writer ID of the hub's next compensating write in an account: the one it wrote
    /// with since the state was loaded (`current`), or else a new incarnation of `base`
    /// (`hub~n`): the machine's `session` incarnation, raised past every incarnation the
    /// account's `context` holds.
    ///
    /// A dot must never name two writes. A state loaded from storage may be an older copy
    /// (a backup put back, a database rolled back) than one the hub wrote from before, and
    /// issuing the counters that followed again would give two different writes one dot:
    /// devices that hold the first would never take the second (a compensation that never
    /// arrives, a quota broken for good). So every machine writes under incarnations of its
    /// own (``writerIncarnation``, which a server draws at random for each process, and
    /// which moves on when a reload finds an older copy), as a restored device does (see
    /// ``ReplicaID/incarnation(_:)``).
    static func writer(of base: ReplicaID, current: ReplicaID?, session: UInt64, in context: VersionVector) -> ReplicaID {
        if let current { return current }
        var highest: UInt64 = 0
        for (replica, _) in context.entries where replica.isIncarnation(of: base) { highest = max(highest, replica.incarnationNumber) }
        // A push naming an incarnation past Dot.maximumCounter is refused (check(_:nowMilliseconds:)).
        return base.incarnation(max(session, highest.addingSaturating(1), 1))
    }

    /// The context a reply to `device` is computed for: what the hub believes of its push
    /// (`believed`), with the device's own writes raised to what the hub holds of them
    /// (`holding`).
    ///
    /// Used for a reply to a page of the device's changes, which claims fewer of its own
    /// writes than the device holds: the page's context stops below the first write of the
    /// device the page leaves out. A page of the reply computed for that lower claim would
    /// stop the device's writes there too, below writes the device holds: a key of the page
    /// whose siblings replaced one of them (a compensation of the hub's) would leave the
    /// device holding it beside them, and no later delta would carry the key again (the
    /// device's context covers all of it). A page is a valid change only for a context the
    /// receiver holds no more than. The device holds every write of its own the hub holds,
    /// or a later write of its own that replaced it (a store holding fewer has reused its
    /// counters: the reply's context shows it, and it starts a new incarnation instead of
    /// applying the reply). A whole push claims all the device held when it made it, and is answered for
    /// its claim: raising every reply so made hub-pages seeds 48 and 59 of the simulator
    /// fail (a write lost, one brought back), for reasons not yet understood.
    static func replyBasis(_ believed: VersionVector, device: ReplicaID, holding: VersionVector) -> VersionVector {
        var basis = believed
        basis.raise(device, to: holding[device])
        return basis
    }

    /// A push's `delta` without the writes of the device's other incarnations (its own
    /// older writer IDs) from the first one whose dot the hub holds as another write (under
    /// another key, or with another value or timestamp) on, and with its context for that
    /// incarnation lowered below it.
    ///
    /// A device that finds its counters reused continues under a new incarnation and
    /// re-stamps the writes of the old one no peer acknowledged; one that did not (a store
    /// that re-stamped only the account that showed the reuse) still carries them under the
    /// old writer ID, as the writes the hub holds under those dots. Carried, they would
    /// raise what the hub believes of the old incarnation (``believable(_:from:sent:)``)
    /// over the hub's writes under those dots, which a whole push would then drop; and the
    /// hub would ignore the carried ones as writes it has seen. So the hub believes a
    /// device's claims on its older incarnations only as far as it sent them or the push
    /// carries the very writes it holds, and keeps its own.
    ///
    /// - Complexity: O(*n*) in the hub's siblings when the push carries a write of another
    ///   incarnation of the device the hub has seen; O(*p*) in the push's siblings otherwise.
    static func withoutReusedDots(_ delta: ReplicatedMap.Delta, from device: ReplicaID, holding map: ReplicatedMap) -> ReplicatedMap.Delta {
        var older: Set<ReplicaID> = []
        for siblings in delta.entries.values {
            for sibling in siblings where sibling.dot.replica != device && sibling.dot.replica.base == device.base
                && map.context.contains(sibling.dot) {
                older.insert(sibling.dot.replica)
            }
        }
        guard !older.isEmpty else { return delta }
        // Every write the hub holds under each dot: a hostile device can have put one dot
        // under two keys, and which one a dictionary would keep must not decide.
        var held: [Dot: [(key: String, sibling: Sibling)]] = [:]
        for (key, siblings) in map.entries {
            for sibling in siblings where older.contains(sibling.dot.replica) { held[sibling.dot, default: []].append((key, sibling)) }
        }
        var firstReused: [ReplicaID: UInt64] = [:]
        for (key, siblings) in delta.entries {
            for sibling in siblings where older.contains(sibling.dot.replica) {
                guard let holding = held[sibling.dot], !holding.contains(where: { $0.key == key && $0.sibling == sibling }) else { continue }
                firstReused[sibling.dot.replica] = min(firstReused[sibling.dot.replica] ?? .max, sibling.dot.counter)
            }
        }
        guard !firstReused.isEmpty else { return delta }
        var entries = delta.entries
        for (key, siblings) in delta.entries {
            let kept = siblings.filter { sibling in firstReused[sibling.dot.replica].map { sibling.dot.counter < $0 } ?? true }
            if kept.count != siblings.count { entries[key] = kept.isEmpty ? nil : kept }
        }
        var counters = delta.context.counterTable
        for (replica, first) in firstReused { counters[replica] = min(counters[replica] ?? 0, first - 1) }
        return ReplicatedMap.Delta(entries: entries, context: VersionVector(counters))
    }

    /// What the hub believes of a push's context: all of it for the device's own writes;
    /// for other replicas (other incarnations of the device and the hub's own included), no
    /// more than `sent` (what the hub sent the device), raised to cover the writes the push
    /// carries.
    ///
    /// In the hub topology a device learns others' writes only from the hub, so a device
    /// cannot claim to have seen writes it was never sent, and so suppress them (drop them
    /// from the hub, or keep them from ever reaching it).
    ///
    /// - Complexity: O(*c* + *s*) in the replicas of the push's context and of `sent`, or
    ///   O(*c* log *s*) when the context names far fewer; plus O(*e* log *r*) for the *e*
    ///   writes the push carries.
    static func believable(_ delta: ReplicatedMap.Delta, from device: ReplicaID, sent: VersionVector) -> VersionVector {
        // Replica by replica, in order: one walk of both vectors (or a search of `sent` for
        // each claimed replica, when the claim names far fewer), not a search of each.
        var claimed: [(replica: ReplicaID, counter: UInt64)] = []
        claimed.reserveCapacity(delta.context.count)
        func keep(_ replica: ReplicaID, _ counter: UInt64, _ given: UInt64) {
            let kept = replica == device ? counter : min(counter, given)
            if kept > 0 { claimed.append((replica, kept)) }
        }
        if delta.context.isSmall(beside: sent) {
            for (replica, counter) in delta.context.entries { keep(replica, counter, sent[replica]) }
        } else {
            VersionVector.walk(delta.context, sent, keep)
        }
        var believed = VersionVector(sorted: claimed)
        for siblings in delta.entries.values {
            for sibling in siblings { believed.raise(sibling.dot.replica, to: sibling.dot.counter) }
        }
        return believed
    }

    /// The hub's state of `account`.
    public func state(of account: AccountID) -> ReplicatedMap {
        accounts[account]?.map ?? ReplicatedMap()
    }

    /// The write session that issued the highest counter of `device` the hub holds in
    /// `account`, as its pushes named it (see ``WriterSessions``), or `nil` if none did.
    package func sessionTip(of device: ReplicaID, in account: AccountID) -> UInt64? {
        accounts[account]?.sessions[device]?.tip?.session
    }

    /// The current members of `account`, in order.
    public func members(of account: AccountID) -> [ReplicaID] {
        (accounts[account]?.members.keys.sorted()) ?? []
    }

    /// The retired members of `account`, in order.
    public func retiredMembers(of account: AccountID) -> [ReplicaID] {
        (accounts[account]?.retired.keys.sorted()) ?? []
    }

    /// How many compensating writes the hub has made in `account`.
    public func compensations(in account: AccountID) -> Int {
        accounts[account]?.compensations ?? 0
    }

    /// How many tombstones the hub has collected in `account`.
    public func tombstonesCollected(in account: AccountID) -> Int {
        accounts[account]?.tombstonesCollected ?? 0
    }

    /// The accounts the hub has state for, in order.
    public var accountIDs: [AccountID] { accounts.keys.sorted() }

    // MARK: Internals

    /// Applies a push key by key; returns the compensating writes it made.
    private func applyEnforcingQuota(_ delta: ReplicatedMap.Delta, partialKeys: Set<String>, account: AccountID, writer: ReplicaID,
                                     to state: inout AccountState, nowMilliseconds: UInt64, droppedOnly: inout Bool) -> [HubCompensation] {
        var rejected: [HubCompensation] = []
        for key in delta.entries.keys.sortedByUTF8() {
            let incoming = delta.entries[key]!
            for sibling in incoming { state.clock.observe(sibling.timestamp) }
            let previous = state.map.siblings(forKey: key)
            let usageBefore = state.map.usage
            // A partial key of a page drops nothing (ReplicatedMap.apply(_:partialKeys:)).
            let senderContext = partialKeys.contains(key) ? VersionVector() : delta.context
            guard state.map.applyEntry(forKey: key, siblings: incoming, senderContext: senderContext) else { continue }
            let current = state.map.siblings(forKey: key)
            if current.allSatisfy({ previous.contains($0) }) { droppedOnly = true }
            let arrived = current.filter { sibling in !sibling.isTombstone && !previous.contains(sibling) }
            guard !arrived.isEmpty, breaksQuota(key: key, arrived: arrived, before: usageBefore, after: state.map.usage) else { continue }
            // Supersede the offending write(s) and restore the key's previous siblings as
            // they were, each re-issued as a write of the hub (same value and timestamp):
            // the key's usage is back to what it was, and under multi-value concurrent
            // siblings stay apart instead of being merged into one larger value. A key that
            // was new gets the hub's tombstone. The incoming dots are covered once the
            // context is joined.
            let offending = arrived.map(\.dot)
            if _forgetsCompensatingWrites {
                state.map.applyEntry(forKey: key, siblings: [], senderContext: VersionVector(Dictionary(
                    arrived.map { ($0.dot.replica, $0.dot.counter) }, uniquingKeysWith: max)))
                rejected.append(HubCompensation(account: account, key: key, superseded: current.map(\.dot), offending: offending,
                                                restoredSiblings: [], policy: policies.policy(forKey: key)))
                continue
            }
            let restoredSiblings: [Sibling]
            if previous.isEmpty {
                let stamp = state.clock.tick(nowMilliseconds: nowMilliseconds)
                // Not `write`, which checks invariants: the delta's context is not joined yet.
                if let tombstone = state.map.plannedWrite(nil, forKey: key, replica: writer, timestamp: stamp) {
                    state.map.commitWrite(tombstone, forKey: key)
                    restoredSiblings = [tombstone]
                } else {
                    restoredSiblings = []
                }
            } else {
                restoredSiblings = state.map.reissue(previous, forKey: key, replica: writer)
            }
            state.compensations += 1
            rejected.append(HubCompensation(account: account, key: key, superseded: current.map(\.dot), offending: offending,
                                            restoredSiblings: restoredSiblings, policy: policies.policy(forKey: key)))
        }
        state.map.formContextUnion(delta.context)
        return rejected
    }

    private func breaksQuota(key: String, arrived: [Sibling], before: QuotaUsage, after: QuotaUsage) -> Bool {
        if _revertsKeysEndingIn3 && key.hasSuffix("3") { return true }
        if key.utf8.count > quota.maximumKeyBytes { return true }
        if arrived.contains(where: { $0.valueSizeBytes > quota.maximumValueBytes }) { return true }
        if after.keyCount > quota.maximumKeyCount && after.keyCount > before.keyCount { return true }
        return after.valueBytes > quota.maximumTotalValueBytes && after.valueBytes > before.valueBytes
    }

    /// Observes the members' acknowledgements and collects the tombstones below the safe
    /// frontier, which it returns. `changed` names the members whose acknowledgement changed,
    /// or that joined or left, since the last collection: the minimum of the others' is kept
    /// (``AcknowledgedMinimum``), and rebuilt from every member when it does not list them all.
    func collect(_ state: inout AccountState, changed: some Sequence<ReplicaID>) -> VersionVector {
        // Observing the same acknowledgements twice changes nothing: skip the work. Only the
        // members in `changed` can differ from what the last collection observed, so comparing
        // them costs what changed, not every member's every replica (1,540 members: 2.4
        // million lookups).
        let observed = state.acknowledgedMinimum.acknowledged
        if let last = state.lastFrontier, observed.count == state.members.count + 1, observed[hubID] == state.map.context,
           changed.allSatisfy({ observed[$0] == state.members[$0]?.acknowledged }) {
            return last
        }
        state.acknowledgedMinimum.set(hubID, to: state.map.context)
        for device in changed {
            if let member = state.members[device] {
                state.acknowledgedMinimum.set(device, to: member.acknowledged)
            } else {
                state.acknowledgedMinimum.remove(device)
            }
        }
        if state.acknowledgedMinimum.acknowledged.count != state.members.count + 1 {
            state.acknowledgedMinimum.update(to: state.acknowledgements(hub: hubID))
        }
        var frontier = state.stability.observe(minimum: state.acknowledgedMinimum.minimum, witnessed: state.acknowledgedMinimum.witnessed)
        if _collectsBeforeStable { frontier = state.map.context }
        state.tombstonesCollected += state.map.collectTombstones(stableFrontier: frontier)
        state.lastFrontier = frontier
        return frontier
    }
}

/// A compensating write the hub made to keep the quota: the writes it superseded (the
/// offending ones, and the key's previous siblings, which it re-issued as they were).
public struct HubCompensation: Hashable, Sendable {
    /// The account whose state the hub compensated.
    public var account: AccountID
    /// The key whose offending write was superseded.
    public var key: String
    /// Every sibling the compensating write superseded, in dot order.
    public var superseded: [Dot]
    /// The writes that broke the quota, in dot order.
    public var offending: [Dot]
    /// The hub's siblings that replaced them: the key's previous siblings re-issued with the
    /// same values and timestamps, or the hub's tombstone if the key was new.
    public var restoredSiblings: [Sibling]
    /// The value visible once restored (what was visible before), or `nil` if the key was new.
    public var restored: Value?

    /// Describes a compensation; ``HubSyncMachine`` makes them.
    public init(account: AccountID, key: String, superseded: [Dot], offending: [Dot], restoredSiblings: [Sibling], policy: MergePolicy) {
        self.account = account
        self.key = key
        self.superseded = superseded
        self.offending = offending
        self.restoredSiblings = restoredSiblings
        self.restored = restoredSiblings.isEmpty ? nil : ReplicatedMap.visibleValue(of: restoredSiblings, policy: policy)
    }
}
