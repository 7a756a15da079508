/// The durable form of one account of a hub: what a hub service writes after each exchange
/// and reads back after a restart, so that a restarted hub answers exactly as the one that
/// stopped would have.
///
/// Layout (integers as in ``BinaryWriter``): a magic byte and a format version, then the
/// replicated state (as ``ReplicatedMap/Delta/encode(into:)``); the hub's clock (wall
/// milliseconds, logical); the members in replica order, each with its acknowledged
/// context, when it was last seen, and the context and frontier of the last reply it got;
/// the retired devices in order, each with the context of the last reply it got (format 2;
/// format 1, still read, kept no context: the hub's own context stands in for it); the
/// returning devices awaiting a full state, each with the context last sent to it and
/// (format 3) the last key of the pages it joined and of the page last sent, each a flag
/// byte and the key if the flag is 1; the
/// stability tracker's candidates (frontier, witnessed) in order and its safe frontier; the
/// counts of collected tombstones and compensating writes; (format 4) the devices whose
/// pushes named their write sessions, in replica order, each with the highest counter the
/// sessions are known to reach and the sessions (``WriterSessions``); and (format 2) a
/// CRC-32C of
/// everything before it, so damage is refused. The cache of the last collection is not
/// kept: it only saves work, and observing the same acknowledgements again gives the same
/// frontier.
extension HubSyncMachine {
    /// The first byte of an encoded account state.
    package static let accountStateMagic: UInt8 = 0xC8
    /// The format version written.
    package static let accountStateFormatVersion: UInt8 = 4

    /// The durable encoding of `account`'s state, or `nil` if the hub holds nothing of it.
    ///
    /// Canonical: equal states encode to equal bytes, whatever order things were added in.
    ///
    /// - Complexity: O(*n* + *m* · *r*) for *n* siblings and *m* members of *r* replicas.
    package func encodedState(of account: AccountID) -> [UInt8]? {
        guard let state = accounts[account] else { return nil }
        var writer = BinaryWriter(reservingCapacity: 256)
        writer.writeByte(Self.accountStateMagic)
        writer.writeByte(Self.accountStateFormatVersion)
        state.map.asDelta.encode(into: &writer)
        state.clock.latest.encode(into: &writer)
        writer.writeVarint(UInt64(state.members.count))
        for device in state.members.keys.sorted() {
            let member = state.members[device]!
            writer.writeString(device.rawValue)
            member.acknowledged.encode(into: &writer)
            writer.writeVarint(member.lastSeenMilliseconds)
            member.lastReplyContext.encode(into: &writer)
            member.lastReplyFrontier.encode(into: &writer)
        }
        writer.writeVarint(UInt64(state.retired.count))
        for device in state.retired.keys.sorted() {
            writer.writeString(device.rawValue)
            state.retired[device]!.encode(into: &writer)
        }
        writer.writeVarint(UInt64(state.awaitingFullState.count))
        for device in state.awaitingFullState.keys.sorted() {
            let progress = state.awaitingFullState[device]!
            writer.writeString(device.rawValue)
            progress.sent.encode(into: &writer)
            for key in [progress.joinedThrough, progress.lastSentThrough] {
                writer.writeByte(key == nil ? 0 : 1)
                if let key { writer.writeString(key) }
            }
        }
        writer.writeVarint(UInt64(state.stability.candidates.count))
        for candidate in state.stability.candidates {
            candidate.frontier.encode(into: &writer)
            candidate.witnessed.encode(into: &writer)
        }
        state.stability.safeFrontier.encode(into: &writer)
        writer.writeVarint(UInt64(state.tombstonesCollected))
        writer.writeVarint(UInt64(state.compensations))
        writer.writeVarint(UInt64(state.sessions.count))
        for device in state.sessions.keys.sorted() {
            writer.writeString(device.rawValue)
            writer.writeVarint(state.sessions[device]!.through)
            state.sessions[device]!.runs.encode(into: &writer)
        }
        return CRC32C.sealed(writer.bytes)
    }

    /// Replaces `account`'s state with one decoded from ``encodedState(of:)``'s bytes.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` (or ``ConvergeError/invalidValue(_:)``) if
    ///   the bytes are not a canonical encoding of this version, or encode a state that
    ///   breaks the hub's invariants (``MalformedInput/Problem/inconsistent``); the machine
    ///   is unchanged.
    /// - Complexity: O(*b*) for *b* bytes.
    package mutating func restoreState(_ bytes: [UInt8], of account: AccountID,
                                       limits: DecodingLimits = DecodingLimits()) throws(ConvergeError) {
        var reader = BinaryReader(bytes)
        guard try reader.readByte() == Self.accountStateMagic else {
            throw .malformed(.notConverge, "not the state of a hub account (bad magic byte)", at: 0)
        }
        let version = try reader.readByte()
        guard (1...Self.accountStateFormatVersion).contains(version) else {
            throw .malformed(.unsupportedVersion, "unsupported hub account format version \(version)", at: 1)
        }
        if version >= 2 {
            reader = BinaryReader(try CRC32C.unsealed(bytes, what: "the state of account \(account)"))
            _ = try reader.readByte()
            _ = try reader.readByte()
        }
        var state = AccountState()
        let delta = try ReplicatedMap.Delta(from: &reader, limits: limits)
        state.map = try ReplicatedMap(entries: delta.entries, context: delta.context)
        state.clock = HybridLogicalClock(latest: try HybridTimestamp(from: &reader))
        let memberCount = try reader.readCount(limit: limits.maximumReplicas, minimumElementBytes: 5)
        var previous: ReplicaID?
        for _ in 0..<memberCount {
            let device = try Self.readOrderedReplica(&reader, after: &previous)
            let acknowledged = try VersionVector(from: &reader, limits: limits)
            let lastSeen = try reader.readVarint()
            var member = Member(acknowledged: acknowledged, lastSeenMilliseconds: lastSeen)
            member.lastReplyContext = try VersionVector(from: &reader, limits: limits)
            member.lastReplyFrontier = try VersionVector(from: &reader, limits: limits)
            state.members[device] = member
        }
        let retiredCount = try reader.readCount(limit: limits.maximumReplicas, minimumElementBytes: 2)
        previous = nil
        for _ in 0..<retiredCount {
            let device = try Self.readOrderedReplica(&reader, after: &previous)
            state.retired[device] = version == 1 ? state.map.context : try VersionVector(from: &reader, limits: limits)
        }
        let awaitingCount = try reader.readCount(limit: limits.maximumReplicas, minimumElementBytes: 3)
        previous = nil
        for _ in 0..<awaitingCount {
            let device = try Self.readOrderedReplica(&reader, after: &previous)
            var progress = Returning(sent: try VersionVector(from: &reader, limits: limits))
            if version >= 3 {
                progress.joinedThrough = try Self.readOptionalKey(&reader)
                progress.lastSentThrough = try Self.readOptionalKey(&reader)
            }
            state.awaitingFullState[device] = progress
        }
        let candidateCount = try reader.readCount(limit: StabilityTracker.maximumCandidates, minimumElementBytes: 2)
        for _ in 0..<candidateCount {
            let frontier = try VersionVector(from: &reader, limits: limits)
            let witnessed = try VersionVector(from: &reader, limits: limits)
            state.stability.candidates.append(StabilityTracker.Candidate(frontier: frontier, witnessed: witnessed))
        }
        state.stability.safeFrontier = try VersionVector(from: &reader, limits: limits)
        let countsAt = reader.offset
        let collected = try reader.readVarint(), compensations = try reader.readVarint()
        guard collected <= UInt64(Int.max), compensations <= UInt64(Int.max) else {
            throw .malformed(.outOfRange, "count out of range", at: countsAt)
        }
        state.tombstonesCollected = Int(collected)
        state.compensations = Int(compensations)
        if version >= 4 {
            let sessionCount = try reader.readCount(limit: limits.maximumReplicas, minimumElementBytes: 3)
            previous = nil
            for _ in 0..<sessionCount {
                let device = try Self.readOrderedReplica(&reader, after: &previous)
                let through = try reader.readVarint()
                state.sessions[device] = KnownSessions(runs: try WriterSessions(from: &reader), through: through)
            }
        }
        try reader.expectEnd()
        // Well-formed pieces can still contradict each other (a clock behind a write the
        // state holds, a member that is also retired): refused, never repaired.
        var restored = self
        restored.accounts[account] = state
        restored.retirementDueMilliseconds = nil
        if let violation = restored._invariantViolation(of: account) {
            throw .malformed(.inconsistent, "the state of account \(account) contradicts itself: \(violation)")
        }
        // The writer of this machine's compensating writes goes on only over a copy that
        // holds all it wrote (another hub's newer copy). Over an older one (a database rolled
        // back) its next writes go under a later incarnation: devices may hold the writes
        // the copy lost.
        if let old = accounts[account], let writer = old.writer {
            if state.map.context[writer] >= old.map.context[writer] {
                state.writer = writer
            } else {
                writerIncarnation = max(writerIncarnation, writer.incarnationNumber.addingSaturating(1))
            }
        }
        accounts[account] = state
        retirementDueMilliseconds = nil // its members were last seen when it was stored
    }

    /// This machine as a new process would load it from storage: every account encoded and
    /// restored, which keeps nothing that is not stored (the writer of compensating writes
    /// in particular), its new writers' incarnations starting at `incarnations`.
    ///
    /// - Throws: What ``restoreState(_:of:limits:)`` throws (it cannot: the states are this
    ///   machine's own).
    package func reloadedFromStorage(incarnationsFrom incarnations: UInt64) throws(ConvergeError) -> HubSyncMachine {
        var reloaded = self
        reloaded.accounts = [:]
        reloaded.writerIncarnation = incarnations
        for account in accountIDs {
            guard let bytes = encodedState(of: account) else { continue }
            try reloaded.restoreState(bytes, of: account)
        }
        return reloaded
    }

    /// Reads a key that may be absent (a flag byte, then the key if it is 1).
    private static func readOptionalKey(_ reader: inout BinaryReader) throws(ConvergeError) -> String? {
        let at = reader.offset
        switch try reader.readByte() {
        case 0: return nil
        case 1: return try reader.readString()
        case let flag: throw .malformed(.unknownTag, "invalid key flag \(flag)", at: at)
        }
    }

    /// Reads a replica ID that must come after `previous` in order (the encoding is canonical).
    private static func readOrderedReplica(_ reader: inout BinaryReader, after previous: inout ReplicaID?) throws(ConvergeError) -> ReplicaID {
        let at = reader.offset
        guard let replica = ReplicaID(try reader.readString(limit: ReplicaID.maximumLengthBytes)) else {
            throw .malformed(.invalidIdentifier, "invalid replica ID", at: at)
        }
        if let previous, !(previous < replica) {
            throw .malformed(.nonCanonical, "replicas not in strictly increasing order", at: at)
        }
        previous = replica
        return replica
    }
}
