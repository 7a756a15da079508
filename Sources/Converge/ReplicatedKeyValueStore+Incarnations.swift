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
/// The store then starts a new incarnation: it writes as `ID~n` from then on (*n* drawn,
/// not counted, so two copies never continue under one ID), and re-stamps under the new
/// writer ID (keeping values and timestamps) every write of its old writer ID that no peer
/// is known to have acknowledged, nor another record of its writer ID shows issued by the
/// same session (a peer's relayed record in the mesh; in a shared folder a file of its own
/// or a later incarnation's: see `checkOwnHistory`), so none of them can be taken for a
/// write peers have seen. Its context for the old writer ID goes back to what it kept, so
/// it fetches again the writes of the old ID it lost with the restore.
/// The message that revealed the reuse was computed for the store's wrong context and is
/// not applied; the next exchange brings everything. Writes the store re-stamps that peers
/// did have arrive twice (the same value and timestamp under two dots), which a read
/// resolves like any concurrent pair; nothing is lost.
///
/// What is acknowledged is recorded durably, per account (a writer's counters are per
/// account): the highest counter of the current writer ID any hub or peer of the account
/// reported holding.
///
/// A copy that issued exactly as many counters as the original cannot be told by counters;
/// the hub tells it by the write sessions that issued them (``WriterSessions``), which the
/// store records per account and sends with every push; every reply names the session
/// the hub recorded for the device's highest counter (``SyncReply/sessionTip``).
extension ReplicatedKeyValueStore {
    static let incarnationKey = "incarnation"

    /// The metadata record of what hubs and peers of `account` acknowledged: the writer ID
    /// and its counter, or (written before accounts had their own, and then the default
    /// account's) the counter of the current writer ID alone.
    static func acknowledgedKey(_ account: AccountID) -> String {
        account == .default ? "acknowledged" : "acknowledged:" + account.rawValue
    }

    /// The metadata record of the write sessions of the current writer ID in `account`:
    /// the writer ID, then ``WriterSessions/encode(into:)``.
    static func writeSessionsKey(_ account: AccountID) -> String { "write-sessions:" + account.rawValue }

    /// The metadata record of the writes of its previous writer ID the store kept under their
    /// dots in `account` when it last started a new incarnation: a ``SessionRecord`` of that
    /// writer ID through the last counter kept, with the runs after it (none if it kept
    /// none). Its files in a shared folder relay it, so a twin still under that writer ID,
    /// whose own files this store's snapshot removed, can tell which of its writes are the
    /// ones this store kept, and from which counter the two issued different ones.
    static func keptOfPreviousWriterKey(_ account: AccountID) -> String { "kept-of-previous-writer:" + account.rawValue }

    /// The write session of this store object (see ``WriterSessions``): from the store's
    /// ``WriteSessionSource`` (random unless told otherwise), unless set, as the simulator
    /// sets it, before the object's first write.
    package var writeSession: UInt64 {
        get { state.withLock { $0.writeSession } }
        set { state.withLock { $0.writeSession = newValue } }
    }

    /// The incarnation recorded in `metadata` (1 if none is).
    static func incarnation(in metadata: [String: [UInt8]]) -> UInt64 {
        metadata[incarnationKey].flatMap { UInt64(String(decoding: $0, as: UTF8.self)) }.map { max($0, 1) } ?? 1
    }


    /// The ID this store's writes are stamped with: ``replicaID`` in its first incarnation,
    /// `replicaID~n` after it found its counters reused (see ``ReplicaID/incarnation(_:)``).
    public var writerID: ReplicaID {
        state.withLock { $0.writerID }
    }

    /// Takes what a medium holds of this replica's own writes (for each of its files in a
    /// shared folder, the writer ID that wrote it, the file's context and the write sessions
    /// it names): the counters were reused, and the store starts a new incarnation, if
    ///
    /// - a file knows more of the store's writer ID than the store does (it was restored or
    ///   recreated), or
    /// - a file of the store's writer ID names another session for a counter both reach (a
    ///   twin under the same replica ID wrote there), or
    /// - the store writes under its replica ID's first writer ID and a file was written under
    ///   a later one: a store this one was copied from, or an earlier life of it, found its
    ///   counters reused and moved on, and may have issued the store's counters first.
    ///
    /// Writes from the first counter the files do not show this store issued are re-stamped,
    /// even if a reader's file acknowledged them: that reader may hold the other copy's.
    /// Writes below it that a file of the store's writer ID shows the same session issued
    /// (or a file of another writer ID of its replica ID relays that it kept, with the same
    /// session) keep their dots, acknowledged or not: they are the writes that file's
    /// writer published, which readers may hold, and re-stamped readers would hold each
    /// twice. This assumes a session (a store object) never issues a counter twice: true
    /// unless its store file is replaced while it is open, which the README forbids.
    ///
    /// - Returns: Whether a new incarnation started.
    /// - Throws: The storage's error.
    @discardableResult
    package func checkOwnHistory(_ files: [(writer: ReplicaID, known: VersionVector, sessions: WriterSessions, relayed: [SessionRecord])])
        throws(ConvergeError) -> Bool {
        try performWrite { (state: State) throws(ConvergeError) -> WritePlan<Bool> in
            guard !state.blindToReusedCounters else { return WritePlan(result: false) }
            let writer = state.writerID
            let own = state.map.context[writer]
            let mine = files.filter { $0.writer == writer }
            let recorded = state.writerSessions
            // The writes another record of this writer ID shows are the ones this store holds
            // (the writes readers took): every counter up to one for which both records name
            // the same session, below the first they name different ones for
            // (``WriterSessions/lastAgreement(with:through:)``).
            // What another writer ID of its replica ID kept of this one (a copy that moved on),
            // and showed the same sessions issued: the same writes. Its runs go on past what it
            // kept, with the sessions under which that copy issued the rest: where they
            // disagree with this store's, the counters were issued twice.
            let relayed = files.filter { $0.writer != writer }.flatMap(\.relayed).filter { $0.writer == writer }
            var reusedFrom = (mine.map { ($0.sessions, min($0.known[writer], own)) } + relayed.map { ($0.runs, own) })
                .compactMap { sessions, through in recorded.firstDisagreement(with: sessions, through: through) }.min()
            let keptByAnother = relayed.compactMap { recorded.lastAgreement(with: $0.runs, through: min($0.through, own)) }.max() ?? 0
            if writer.base == writer && files.contains(where: { $0.writer != writer && $0.writer.base == writer }) {
                // What its own files show it wrote, readers took as its: kept (a twin that lagged
                // may have issued some of those counters too), and so is what the later writer
                // ID kept. The rest is re-stamped: usually all of it when no record was relayed,
                // since the later writer ID's snapshot removed this store's files, and readers
                // that took those writes then hold each twice (known, not fixed).
                let shown = mine.map { min($0.known[writer], own) }.max() ?? 0
                reusedFrom = min(reusedFrom ?? .max, max(shown, keptByAnother) + 1)
            }
            guard files.contains(where: { state.reusesCounters(given: $0.known) }) || reusedFrom != nil else {
                return WritePlan(result: false)
            }
            // Writes a file shows the same sessions issued are kept, not re-stamped (readers
            // would otherwise hold each twice, and nothing in the folder withdraws the original).
            let confirmed = max(keptByAnother, mine.compactMap { recorded.lastAgreement(with: $0.sessions, through: min($0.known[writer], own)) }.max() ?? 0)
            return WritePlan(update: .replaceAll(try state.reincarnated(restampingFrom: reusedFrom, keepingThrough: confirmed)), result: true)
        }
    }
}

extension ReplicatedKeyValueStore.State {
    /// Whether `known`, what a hub or peer holds, proves that this store's current writer
    /// ID issued counters it no longer knows of.
    func reusesCounters(given known: VersionVector) -> Bool {
        !blindToReusedCounters && known[writerID] > map.context[writerID]
    }

    /// The highest counter of the current writer ID a hub or peer of the current account
    /// reported holding (0 for none, or for a record of another writer ID). A record above
    /// what the store issued cannot be true (it is recorded with the state it acknowledges):
    /// damaged, it counts as 0, so the store re-stamps more rather than keep a reused dot.
    var acknowledged: UInt64 {
        let recorded = acknowledged(in: account)
        return recorded <= map.context[writerID] ? recorded : 0
    }

    /// The highest counter of the current writer ID a hub or peer of `account` reported
    /// holding (0 for none, or for a record of another writer ID).
    ///
    /// - Parameter acceptingBareNumber: Whether a record of a number alone (written before
    ///   records named their account's writer, for whichever account was current) counts;
    ///   for an account kept aside it may be another account's, so it does not.
    func acknowledged(in account: AccountID, acceptingBareNumber: Bool = true) -> UInt64 {
        guard let record = metadata[ReplicatedKeyValueStore.acknowledgedKey(account)] else { return 0 }
        let fields = String(decoding: record, as: UTF8.self).split(separator: " ")
        switch fields.count {
        case 1: return acceptingBareNumber ? UInt64(fields[0]) ?? 0 : 0
        case 2: return fields[0] == writerID.rawValue ? UInt64(fields[1]) ?? 0 : 0
        default: return 0
        }
    }

    /// The record of `counter` acknowledged for `writer` in `account` (the current one by default).
    func acknowledgedRecord(_ counter: UInt64, writer: ReplicaID, in account: AccountID? = nil) -> [String: [UInt8]?] {
        [ReplicatedKeyValueStore.acknowledgedKey(account ?? self.account): Array("\(writer.rawValue) \(counter)".utf8)]
    }

    /// What the store kept of its previous writer ID in the current account when it last
    /// started a new incarnation (see ``ReplicatedKeyValueStore/keptOfPreviousWriterKey(_:)``),
    /// if anything, and if the record is readable and of an earlier writer ID of its replica ID.
    var keptOfPreviousWriter: SessionRecord? {
        guard let bytes = metadata[ReplicatedKeyValueStore.keptOfPreviousWriterKey(account)] else { return nil }
        var reader = BinaryReader(bytes)
        guard let record = try? SessionRecord(from: &reader), reader.isAtEnd,
              record.writer.base == writerID.base, record.writer != writerID else { return nil }
        return record
    }

    /// The write sessions recorded for the current writer ID in the current account (none
    /// if the record is of another writer ID, or unreadable: then nothing is checked).
    var writerSessions: WriterSessions {
        guard let bytes = metadata[ReplicatedKeyValueStore.writeSessionsKey(account)] else { return WriterSessions() }
        var reader = BinaryReader(bytes)
        guard let writer = try? reader.readString(), writer == writerID.rawValue,
              let sessions = try? WriterSessions(from: &reader), reader.isAtEnd else { return WriterSessions() }
        return sessions
    }

    /// The metadata record of `sessions`, for `writer` and `account` (the current ones by default).
    func sessionsRecord(_ sessions: WriterSessions, writer: ReplicaID? = nil, in account: AccountID? = nil) -> [String: [UInt8]?] {
        var bytes = BinaryWriter()
        bytes.writeString((writer ?? writerID).rawValue)
        sessions.encode(into: &bytes)
        return [ReplicatedKeyValueStore.writeSessionsKey(account ?? self.account): bytes.bytes]
    }

    /// The metadata change recording that this object's session issues counters from
    /// `firstCounter` on: empty if the last run is already its own.
    ///
    /// - Complexity: O(1) when the record is the one ``install(_:)`` last found to end in
    ///   this object's run (every write but a session's first); O(*r*) in the runs otherwise.
    func sessionRecord(issuing firstCounter: UInt64) -> [String: [UInt8]?] {
        // Not copied out of its optional: a copy would retain its key and bytes at every write.
        if ownRunRecorded?.isCurrent(in: self) == true { return [:] }
        return writerSessions.issuing(from: firstCounter, session: writeSession).map { sessionsRecord($0) } ?? [:]
    }

    /// Finds out again, after the metadata, the writer ID or the account changed, whether
    /// the sessions record ends in this object's run (see ``ownRunRecorded``).
    mutating func noteOwnRun() {
        let key = ReplicatedKeyValueStore.writeSessionsKey(account)
        guard let bytes = metadata[key], writerSessions.runs.last?.session == writeSession else {
            ownRunRecorded = nil
            return
        }
        ownRunRecorded = OwnRunRecord(account: account, key: key, bytes: bytes, writer: writerID, session: writeSession,
                                      metadataVersion: metadataVersion)
    }

    /// The number of the next incarnation: drawn from this object's write session and the
    /// current incarnation, not counted up. The incarnation is recorded in the store, so a
    /// store restored from a backup, or each of two copies, would count up to a number it
    /// or its twin already wrote under; two sessions draw the same only by chance (1 in
    /// 2⁴⁰).
    var nextIncarnation: UInt64 {
        let current = ReplicatedKeyValueStore.incarnation(in: metadata)
        // SplitMix64's finaliser: every bit of the session and the incarnation moves the result.
        let mixed = WriteSessionSource.splitMix64Finalised(writeSession ^ (current &* 0x9E37_79B9_7F4A_7C15))
        let drawn = 2 + mixed % (1 << 40)
        return drawn == current ? drawn + 1 : drawn
    }

    /// The stored state of the next incarnation: in the current account and in every
    /// account whose state the store keeps aside (see
    /// ``ReplicatedKeyValueStore/switchAccount(to:)``), the writes of the current writer ID
    /// that no peer of that account acknowledged re-stamped under the next one, in counter
    /// order.
    ///
    /// Every account, not only the current one: a writer's counters are per account, and
    /// the reuse shows in whichever account syncs first. The writes a restored store made
    /// in another account reuse that account's counters just the same; left under the old
    /// writer ID they would be pushed under the new one, and the hub would take them for
    /// the writes it holds under those dots (and drop its own that their context claims).
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` if a kept-aside state cannot be read, or
    ///   if the result breaks an invariant of the map (it cannot: every re-stamped write is
    ///   covered by the new context).
    ///
    /// - Parameters:
    ///   - reusedFrom: The first counter of the current writer ID known to have been
    ///     issued twice, if known: the writes of the current account from there on are
    ///     re-stamped even if a peer acknowledged them (it may hold the other copy's).
    ///   - confirmed: The highest counter of the current writer ID through which the store's
    ///     writes of the current account are known to be the ones peers may hold (the same
    ///     sessions issued them): kept as if acknowledged, below `reusedFrom`.
    func reincarnated(restampingFrom reusedFrom: UInt64? = nil, keepingThrough confirmed: UInt64 = 0) throws(ConvergeError) -> StoredState {
        let old = writerID
        let incarnation = nextIncarnation
        let newWriter = old.base.incarnation(incarnation)
        var metadata = metadata
        metadata[ReplicatedKeyValueStore.incarnationKey] = Array(String(incarnation).utf8)
        // The re-stamped writes of each account are this object's session's, under the new writer ID.
        func recordRestamped(_ count: Int, in account: AccountID) {
            for (name, record) in acknowledgedRecord(0, writer: newWriter, in: account) { metadata[name] = record }
            let sessions = count == 0 ? WriterSessions() : WriterSessions(runs: [.init(firstCounter: 1, session: writeSession)])!
            for (name, record) in sessionsRecord(sessions, writer: newWriter, in: account) { metadata[name] = record }
        }
        let keptThrough = min(max(acknowledged, confirmed), (reusedFrom ?? .max) - 1, map.context[old])
        let current = try Self.restamped(map, from: old, above: keptThrough, to: newWriter)
        recordRestamped(current.count, in: account)
        // From the run holding the last counter kept, and the first runs after it (the
        // sessions the counters were issued under since, which a twin compares with its own),
        // ending where what the record shows ends (the last counter this store issued, or the
        // first run left out): an unknown run, so that no counter past it is compared.
        var keptRecord = BinaryWriter()
        var keptRuns = Array(writerSessions.keeping(from: keptThrough).runs.prefix(SessionRecord.maximumRelayedRuns))
        var shownThrough = map.context[old]
        if keptRuns.count == SessionRecord.maximumRelayedRuns {
            shownThrough = min(shownThrough, keptRuns.removeLast().firstCounter - 1)
        }
        if let last = keptRuns.last, last.firstCounter <= shownThrough, shownThrough < Dot.maximumCounter {
            keptRuns.append(.init(firstCounter: shownThrough + 1, session: WriterSessions.unknownSession))
        }
        WriterSessions(runs: keptRuns).flatMap { SessionRecord(writer: old, runs: $0, through: keptThrough) }?.encode(into: &keptRecord)
        metadata[ReplicatedKeyValueStore.keptOfPreviousWriterKey(account)] = keptRecord.bytes.isEmpty ? nil : keptRecord.bytes
        let prefix = ReplicatedKeyValueStore.accountCachePrefix
        for name in self.metadata.keys.sorted() where name.hasPrefix(prefix) {
            guard let bytes = self.metadata[name], let other = AccountID(String(name.dropFirst(prefix.count))),
                  ReplicatedKeyValueStore.accountCacheKey(other) == name else { continue }
            // A cache that cannot be read is left as it is: switching to its account fails as
            // it did before, and it must not keep the current account from recovering.
            guard let cache = try? ReplicatedMap(encoded: bytes) else { continue }
            let kept = try Self.restamped(cache, from: old, above: acknowledged(in: other, acceptingBareNumber: false), to: newWriter)
            metadata[name] = kept.map.encoded()
            recordRestamped(kept.count, in: other)
        }
        return StoredState(map: current.map, clock: clock.latest, metadata: metadata)
    }

    /// `map` with the writes of `old` above `acknowledged` re-stamped under `newWriter`
    /// (counting from 1, in counter order, keeping values and timestamps), and its context
    /// for `old` lowered to `acknowledged`, so the writes of `old` it lost are fetched again.
    ///
    /// - Returns: The map and the number of writes re-stamped.
    /// - Throws: ``ConvergeError/malformed(_:)`` if the result breaks an invariant of the
    ///   map (it cannot: every re-stamped write is covered by the new context).
    static func restamped(_ map: ReplicatedMap, from old: ReplicaID, above acknowledged: UInt64,
                          to newWriter: ReplicaID) throws(ConvergeError) -> (map: ReplicatedMap, count: Int) {
        var unacknowledged: [(counter: UInt64, key: String)] = []
        for (key, siblings) in map.entries {
            for sibling in siblings where sibling.dot.replica == old && sibling.dot.counter > acknowledged {
                unacknowledged.append((sibling.dot.counter, key))
            }
        }
        // By counter, then key: a hostile peer can have put one dot under two keys, and the
        // order must not be the dictionary's.
        unacknowledged.sort { $0.counter != $1.counter ? $0.counter < $1.counter : $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
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
        // Never above what the map holds: a record that claims more (damaged, or of another
        // account) must not make the map take writes of `old` it lacks for seen.
        counters[old] = min(acknowledged, map.context[old])
        counters[newWriter] = UInt64(unacknowledged.count)
        return (try ReplicatedMap(entries: entries, context: VersionVector(counters)), unacknowledged.count)
    }

    /// The metadata change recording that a hub or peer holds `known` of this store's
    /// writes, or `nil` if it says nothing new.
    func acknowledgement(from known: [VersionVector]) -> [String: [UInt8]?]? {
        let highest = known.map { $0[writerID] }.max() ?? 0
        guard highest > acknowledged else { return nil }
        var change = acknowledgedRecord(highest, writer: writerID)
        // Runs wholly below what a hub or peer holds need no check any more.
        let sessions = writerSessions
        let kept = sessions.keeping(from: highest)
        if kept != sessions { change.merge(sessionsRecord(kept)) { _, new in new } }
        return change
    }
}

/// A sessions record found to end in a store object's own run, with what the finding
/// depends on: the account, the record's bytes (which name the writer ID and the runs),
/// the writer ID and the object's session, and the version of the metadata it was found in.
struct OwnRunRecord: Sendable {
    /// The account whose record it is.
    let account: AccountID
    /// The record's metadata key (``ReplicatedKeyValueStore/writeSessionsKey(_:)``).
    let key: String
    /// The record as it was found.
    let bytes: [UInt8]
    /// The writer ID it was found for.
    let writer: ReplicaID
    /// The session it was found to end in.
    let session: UInt64
    /// The state's ``ReplicatedKeyValueStore/State/metadataVersion`` when it was found.
    let metadataVersion: UInt64

    /// Whether the finding still holds for `state`: same account, writer ID and session,
    /// and the same record (certainly, without a lookup, if the metadata did not change
    /// since: every write but a session's first, unless a sync recorded something).
    func isCurrent(in state: ReplicatedKeyValueStore.State) -> Bool {
        session == state.writeSession && writer == state.writerID && account == state.account
            && (metadataVersion == state.metadataVersion || state.metadata[key] == bytes)
    }
}
