/// What a device knows of which write sessions issued one writer ID's counters, up to a
/// counter its state holds: how two devices that each heard one of two copies of a store
/// (a restored store and the writes it lost, or a store copied to a second device) find
/// out, although neither heard both copies.
///
/// Mesh gossip carries the sender's records of every writer ID it holds writes of
/// (``SyncGossip/relayedSessions``), so the records travel with the writes. Two records of
/// one writer ID that name different sessions for a counter both reach prove the counter
/// issued twice: the receiver takes nothing of that gossip (it would take one copy's
/// writes for the other's), and a store whose own writer ID it is starts a new incarnation.
public struct SessionRecord: Hashable, Sendable {
    /// The writer ID the runs are of.
    public var writer: ReplicaID
    /// The latest runs known of `writer`.
    public var runs: WriterSessions
    /// The highest counter of `writer` the runs are known to reach (the context, when the
    /// record was made, of the device that made it).
    public var through: UInt64

    /// The most runs a relayed record carries: the latest ones, or (what a new incarnation
    /// relays of what it kept of its previous writer ID) the run of the last counter kept
    /// and the first ones after it.
    public static let maximumRelayedRuns = 4

    /// Creates a record; `nil` if the runs do not reach back to `through` (or it is 0).
    public init?(writer: ReplicaID, runs: WriterSessions, through: UInt64) {
        guard through > 0, runs.session(at: through) != nil else { return nil }
        self.writer = writer
        self.runs = runs
        self.through = through
    }

    /// The first counter the runs reach back to.
    public var first: UInt64 { runs.runs.first?.firstCounter ?? through }

    /// The session that issued ``through``.
    public var tip: WriterSessions.Tip {
        WriterSessions.Tip(counter: through, session: runs.session(at: through) ?? 0)
    }

    /// The first counter for which this record and `other`, of the same writer ID, name
    /// different sessions, up to the lower of the two `through`s; `nil` if they agree as
    /// far as both reach.
    public func firstDisagreement(with other: SessionRecord) -> UInt64? {
        runs.firstDisagreement(with: other.runs, through: min(through, other.through))
    }

    /// Whether this record, of the writer ID a withdrawn record is of, shows that its
    /// holder holds writes of the withdrawn ones and no others of that writer from its first
    /// counter on: it reaches the withdrawn record's first counter, not beyond its last (a
    /// holder that reaches beyond holds the other copy's writes), and agrees with it as far
    /// as both reach.
    func holdsWithdrawn(_ withdrawn: SessionRecord) -> Bool {
        through >= withdrawn.first && through <= withdrawn.through && firstDisagreement(with: withdrawn) == nil
    }

    /// The record of the writes this one holds below `counter`, or `nil` for none.
    func below(_ counter: UInt64) -> SessionRecord? {
        guard counter > 1 else { return nil }
        return SessionRecord(writer: writer, runs: runs, through: min(through, counter - 1))
    }

    /// A withdrawn record: `runs` from `from` on (the run holding it starting there),
    /// through `through`; `nil` if `through` is below `from` or the runs do not reach back.
    static func withdrawn(writer: ReplicaID, runs: WriterSessions, from: UInt64, through: UInt64) -> SessionRecord? {
        guard from >= 1, through >= from, runs.session(at: from) != nil else { return nil }
        var kept = runs.keeping(from: from).runs
        kept[0].firstCounter = from
        guard let trimmed = WriterSessions(runs: kept) else { return nil }
        return SessionRecord(writer: writer, runs: trimmed, through: through)
    }

    /// The order of records in a gossip's withdrawn list: by writer ID, then first counter,
    /// last counter, and the sessions of the runs (two copies may withdraw from one counter).
    static func canonicallyPrecedes(_ lhs: SessionRecord, _ rhs: SessionRecord) -> Bool {
        if lhs.writer != rhs.writer { return lhs.writer < rhs.writer }
        if lhs.first != rhs.first { return lhs.first < rhs.first }
        if lhs.through != rhs.through { return lhs.through < rhs.through }
        return lhs.runs.runs.map { [$0.firstCounter, $0.session] }.lexicographicallyPrecedes(rhs.runs.runs.map { [$0.firstCounter, $0.session] }) {
            $0.lexicographicallyPrecedes($1)
        }
    }

    /// This record continued by `later`, of the same writer ID and reaching at least as
    /// far, which it agrees with: the runs of both (a run of
    /// ``WriterSessions/unknownSession`` between them if `later` starts past this record's
    /// through), `later`'s through.
    func continued(by later: SessionRecord) -> SessionRecord {
        var next = later
        next.runs = later.runs.continuing(runs, through: through)
        return next
    }

    /// The record as gossip relays it: the latest ``maximumRelayedRuns`` runs, from the
    /// first whose session it knows (a receiver would take a leading run of
    /// ``WriterSessions/unknownSession`` as overriding what it knows of those counters).
    var relayed: SessionRecord {
        var kept = self
        kept.runs = runs.latest(count: Self.maximumRelayedRuns).droppingLeadingUnknown()
        return kept
    }

    /// Writes the record: the writer ID, the through counter, then the runs.
    func encode(into writer: inout BinaryWriter) {
        writer.writeString(self.writer.rawValue)
        writer.writeVarint(through)
        runs.encode(into: &writer)
    }

    /// Reads a record written by ``encode(into:)``.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` if it is truncated, its writer ID is not
    ///   valid, or its runs do not reach its through counter.
    init(from reader: inout BinaryReader) throws(ConvergeError) {
        let at = reader.offset
        guard let writer = ReplicaID(try reader.readString(limit: ReplicaID.maximumLengthBytes)) else {
            throw .malformed(.invalidIdentifier, "invalid writer ID in a relayed session record", at: at)
        }
        let through = try reader.readVarint()
        guard through <= Dot.maximumCounter else {
            throw .malformed(.outOfRange, "a session record's counter \(through) is above the largest counter", at: at)
        }
        let runs = try WriterSessions(from: &reader)
        guard let record = SessionRecord(writer: writer, runs: runs, through: through) else {
            throw .malformed(.nonCanonical, "a relayed session record whose runs do not reach its counter", at: at)
        }
        self = record
    }
}
