/// Which write session issued each of a writer's recent counters: how a hub tells a
/// store restored from a backup, or copied to a second device, from the store it was
/// copied from when both have issued the same number of counters.
///
/// Counters alone cannot show that: a copy that writes as many new writes as it lost
/// reaches the same counter as the original, and a hub would take its writes for ones it
/// has seen. But every store object draws a random session number when it opens, and
/// the store records, for its current writer ID, the counter from which each session
/// issued (a *run*). A copy that goes on from an older state issues under a session the
/// original never had, so for any counter both issued the two disagree on the session.
/// The hub keeps each writer's runs as its pushes named them, up to the highest counter
/// it holds: a push whose own runs name another session for any counter both reach proves
/// the reuse, and the hub does not take it (before it could drop a write the push claims
/// to have seen). Every reply names the session of the highest counter the hub holds (a
/// ``Tip``), so the device finds out (see ``SyncReply/sessionTip``), even from a reply to
/// a push of the store it was copied from.
///
/// Runs are kept from the one holding the highest counter a hub acknowledged onward, at
/// most ``maximumRuns`` of them: older counters never need a check, since a hub only
/// ever compares at a counter it holds, and it holds what it acknowledged.
public struct WriterSessions: Hashable, Sendable {
    /// Counters from `firstCounter` up to the next run's first counter (exclusive) were
    /// issued by the store object whose session number is `session`.
    public struct Run: Hashable, Sendable {
        /// The first counter the session issued in this run.
        public var firstCounter: UInt64
        /// The session's random number.
        public var session: UInt64

        /// Creates a run.
        public init(firstCounter: UInt64, session: UInt64) {
            self.firstCounter = firstCounter
            self.session = session
        }
    }

    /// The session that issued one counter of a writer, as a hub recorded it.
    public struct Tip: Hashable, Sendable {
        /// The counter.
        public var counter: UInt64
        /// The session that issued it.
        public var session: UInt64

        /// Creates a tip.
        public init(counter: UInt64, session: UInt64) {
            self.counter = counter
            self.session = session
        }
    }

    /// The runs, by increasing first counter, each of another session than the one before.
    public private(set) var runs: [Run]

    /// The most runs kept (and sent): a store whose processes took turns writing more often
    /// than this between two acknowledgements keeps the latest, and a hub then cannot check
    /// the earliest counters.
    public static let maximumRuns = 16

    /// The session number of a run whose counters' sessions a record does not know: the
    /// gap between two records of a writer that a device joined, when the later one starts
    /// past where the earlier one ends (``session(at:)`` is `nil` there, and no comparison
    /// looks at it). No store object's session is 0.
    public static let unknownSession: UInt64 = 0

    /// No runs: nothing known of who issued any counter.
    public init() { runs = [] }

    /// Runs in order; `nil` if they are not canonical (first counters not strictly
    /// increasing from 1 or more, two runs in a row of one session, too many runs).
    ///
    /// - Parameter runs: The runs, by increasing first counter.
    public init?(runs: [Run]) {
        guard runs.count <= Self.maximumRuns, runs.first.map({ $0.firstCounter > 0 }) ?? true else { return nil }
        for (earlier, later) in zip(runs, runs.dropFirst())
        where later.firstCounter <= earlier.firstCounter || later.session == earlier.session {
            return nil
        }
        self.runs = runs
    }

    /// Whether nothing is known.
    public var isEmpty: Bool { runs.isEmpty }

    /// The session that issued `counter`, or `nil` if these runs do not reach back to it.
    /// A counter past the last run's first is the last run's: a caller asks only of
    /// counters its writer issued.
    ///
    /// - Parameter counter: A counter of the writer.
    /// - Returns: The session's number, or `nil`.
    /// - Complexity: O(*r*) in the runs.
    public func session(at counter: UInt64) -> UInt64? {
        guard let session = runs.last(where: { $0.firstCounter <= counter })?.session, session != Self.unknownSession else { return nil }
        return session
    }

    /// Whether `tip` names another session for one of the first `issued` counters than
    /// these runs do: the counter was issued twice, by this store and by another copy of
    /// it. `false` when the runs do not reach back to the tip's counter, or the writer has
    /// not issued it (its counters then show the reuse).
    ///
    /// - Parameters:
    ///   - tip: What a hub recorded of the writer's highest counter it holds.
    ///   - issued: The highest counter the writer issued.
    /// - Returns: Whether the tip proves the writer's counters reused.
    /// - Complexity: O(*r*) in the runs.
    public func contradicts(_ tip: Tip, issued: UInt64) -> Bool {
        guard tip.counter <= issued, let session = session(at: tip.counter) else { return false }
        return session != tip.session
    }

    /// Whether `other`, another record of the same writer's runs, names another session
    /// than these for any counter both reach, up to `through`: the writer's counters were
    /// issued twice, by two copies of one store.
    ///
    /// - Parameters:
    ///   - other: Another record of the same writer's runs.
    ///   - through: The highest counter to compare.
    /// - Returns: Whether the two records name different sessions for one counter.
    /// - Complexity: O(*r*²) in the runs of both (at most ``maximumRuns`` each).
    public func disagrees(with other: WriterSessions, through: UInt64) -> Bool {
        firstDisagreement(with: other, through: through) != nil
    }

    /// The first counter, up to `through`, for which `other`, another record of the same
    /// writer's runs, names another session than these; `nil` if they agree wherever both
    /// reach. Counters below where either record starts are not compared.
    ///
    /// - Parameters:
    ///   - other: Another record of the same writer's runs.
    ///   - through: The highest counter to compare.
    /// - Returns: The first counter issued twice, as far as the records show.
    /// - Complexity: O(*r*²) in the runs of both (at most ``maximumRuns`` each).
    public func firstDisagreement(with other: WriterSessions, through: UInt64) -> UInt64? {
        guard let mine = runs.first?.firstCounter, let theirs = other.runs.first?.firstCounter else { return nil }
        let from = max(mine, theirs)
        guard from <= through else { return nil }
        // Both are constant between their runs' first counters: compare at each of them, in order.
        // A counter either record does not know the session of (``unknownSession``) is not
        // compared.
        let points = ([from] + (runs + other.runs).map(\.firstCounter).filter { $0 > from && $0 <= through }).sorted()
        return points.first { point in
            guard let mine = session(at: point), let theirs = other.session(at: point) else { return false }
            return mine != theirs
        }
    }

    /// The first counter, up to `through`, that `other` names a session for and these runs
    /// do not show issued by that session: they name another, or a run of
    /// ``unknownSession`` covers it; `nil` if there is none. Counters below where either
    /// record starts are not compared.
    ///
    /// ``firstDisagreement(with:through:)`` takes a counter these runs do not know the
    /// session of as agreeing, which is right for refusing gossip (a gap is no proof of
    /// reuse) but not for finding where two copies parted: they may have parted inside the
    /// gap, and a writer's successor that adopted orphans only from the first proven
    /// disagreement would leave those under the gap's counters, held as if they were its
    /// own writes.
    ///
    /// - Parameters:
    ///   - other: Another record of the same writer's runs.
    ///   - through: The highest counter to compare.
    /// - Returns: The first counter not shown issued once, by the same session in both.
    /// - Complexity: O(*r*²) in the runs of both (at most ``maximumRuns`` each).
    func firstCounterNotShownShared(with other: WriterSessions, through: UInt64) -> UInt64? {
        guard let mine = runs.first?.firstCounter, let theirs = other.runs.first?.firstCounter else { return nil }
        let from = max(mine, theirs)
        guard from <= through else { return nil }
        let points = ([from] + (runs + other.runs).map(\.firstCounter).filter { $0 > from && $0 <= through }).sorted()
        return points.first { point in
            guard let theirs = other.session(at: point) else { return false }
            return session(at: point) != theirs
        }
    }

    /// The last counter up to `through`, below the first for which `other` names another
    /// session, that both records name one session for; `nil` if there is none. A session
    /// is one store object: two copies of a store name the same session for a counter only
    /// if it was issued before they parted, and so was every counter below it, so the
    /// writes of both under those counters are the same writes.
    ///
    /// - Parameters:
    ///   - other: Another record of the same writer's runs.
    ///   - through: The highest counter to compare.
    /// - Returns: The last counter shown issued once, by the same session in both.
    /// - Complexity: O(*r*²) in the runs of both (at most ``maximumRuns`` each).
    public func lastAgreement(with other: WriterSessions, through: UInt64) -> UInt64? {
        let agreed = min(through, (firstDisagreement(with: other, through: through) ?? .max) - 1)
        guard agreed > 0, let session = session(at: agreed), other.session(at: agreed) == session else { return nil }
        return agreed
    }

    /// The latest runs whose encoding takes at most `bytes` (always the last run): what a
    /// request with little room sends. The hub then cannot check the counters of the runs
    /// left out.
    func latest(fittingIn bytes: Int) -> WriterSessions {
        var kept = self
        while kept.runs.count > 1 && kept.encodedSize > bytes { kept.runs.removeFirst() }
        return kept
    }

    /// These runs without any leading run of ``unknownSession``.
    func droppingLeadingUnknown() -> WriterSessions {
        var kept = self
        while kept.runs.count > 1 && kept.runs[0].session == Self.unknownSession { kept.runs.removeFirst() }
        return kept
    }

    /// The latest `count` runs (all if there are fewer).
    func latest(count: Int) -> WriterSessions {
        var kept = self
        if kept.runs.count > count { kept.runs.removeFirst(kept.runs.count - count) }
        return kept
    }

    /// `earlier`, a record of counters up to `earlierThrough`, continued by these runs
    /// (which win where both reach), at most ``maximumRuns``, the latest kept.
    ///
    /// If these runs start past `earlierThrough + 1`, neither record says which sessions
    /// issued the counters between (a writer drops the runs below what some peer
    /// acknowledged, and another peer may have heard of it only before that): a run of
    /// ``unknownSession`` covers them. `earlier`'s last run would otherwise claim those
    /// counters, and a record naming their true session would then seem to disagree; what
    /// `earlier` knows up to `earlierThrough` is still compared.
    func continuing(_ earlier: WriterSessions, through earlierThrough: UInt64) -> WriterSessions {
        guard let start = runs.first?.firstCounter else { return earlier }
        var merged = earlier.runs.filter { $0.firstCounter < start }
        if !merged.isEmpty && start - 1 > earlierThrough {
            merged.removeAll { $0.firstCounter > earlierThrough }
            if merged.last?.session != Self.unknownSession {
                merged.append(Run(firstCounter: earlierThrough + 1, session: Self.unknownSession))
            }
        }
        for run in runs where merged.last?.session != run.session { merged.append(run) }
        if merged.count > Self.maximumRuns { merged.removeFirst(merged.count - Self.maximumRuns) }
        return WriterSessions(runs: merged) ?? self
    }

    /// These runs after `session` issued counters from `firstCounter` on, or `nil` if the
    /// last run is already that session's.
    func issuing(from firstCounter: UInt64, session: UInt64) -> WriterSessions? {
        if runs.last?.session == session { return nil }
        var next = self
        next.runs.removeAll { $0.firstCounter >= firstCounter }
        if next.runs.last?.session == session { return next }
        next.runs.append(Run(firstCounter: firstCounter, session: session))
        if next.runs.count > Self.maximumRuns { next.runs.removeFirst(next.runs.count - Self.maximumRuns) }
        return next
    }

    /// These runs without those wholly below `counter` (the one holding it stays).
    func keeping(from counter: UInt64) -> WriterSessions {
        guard let holding = runs.lastIndex(where: { $0.firstCounter <= counter }), holding > 0 else { return self }
        var next = self
        next.runs.removeFirst(holding)
        return next
    }

    /// The bytes ``encode(into:)`` writes.
    var encodedSize: Int {
        var writer = BinaryWriter()
        encode(into: &writer)
        return writer.bytes.count
    }

    /// Writes the runs: a count, then each first counter and session.
    func encode(into writer: inout BinaryWriter) {
        writer.writeVarint(UInt64(runs.count))
        for run in runs {
            writer.writeVarint(run.firstCounter)
            writer.writeFixed64(run.session)
        }
    }

    /// Reads runs written by ``encode(into:)``.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` if they are truncated or not canonical.
    init(from reader: inout BinaryReader) throws(ConvergeError) {
        let at = reader.offset
        let count = try reader.readCount(limit: Self.maximumRuns, minimumElementBytes: 9)
        var runs: [Run] = []
        for _ in 0..<count {
            let first = try reader.readVarint()
            guard first <= Dot.maximumCounter else {
                throw .malformed(.outOfRange, "a write session's first counter \(first) is above the largest counter", at: at)
            }
            runs.append(Run(firstCounter: first, session: try reader.readFixed64()))
        }
        guard let sessions = WriterSessions(runs: runs) else {
            throw .malformed(.nonCanonical, "write sessions out of order, repeated or starting at counter 0", at: at)
        }
        self = sessions
    }
}

/// Where a store object's write session comes from (see ``WriterSessions``): the core
/// takes its randomness as input, so the simulator and tests can make it deterministic.
///
/// A store object draws one session when it opens. A later one (when its storage went back
/// under it) is not drawn but derived from the current one by a SplitMix64 step
/// (``next(after:)``), as the next incarnation is (see ``ReplicatedKeyValueStore/writerID``).
package struct WriteSessionSource: Sendable {
    private let draw: @Sendable () -> UInt64

    /// A source that calls `draw` for each store object's first session (a zero it returns
    /// is taken as 1: no session is 0).
    ///
    /// - Parameter draw: Returns the session of a store object that opens.
    package init(_ draw: @escaping @Sendable () -> UInt64) {
        self.draw = draw
    }

    /// The system's random number generator: what every store uses unless told otherwise.
    package static var system: WriteSessionSource {
        WriteSessionSource { UInt64.random(in: 1...UInt64.max) }
    }

    /// A source that gives every store object `session` (1 for 0).
    ///
    /// - Parameter session: The session of every store object opened with this source.
    package static func fixed(_ session: UInt64) -> WriteSessionSource {
        WriteSessionSource { session }
    }

    /// The session of a store object that opens now.
    func firstSession() -> UInt64 {
        max(draw(), 1)
    }

    /// The session that follows `session` in the same store object: one SplitMix64 step
    /// (add the golden gamma, then the finaliser), never 0.
    ///
    /// - Parameter session: The object's current session.
    package static func next(after session: UInt64) -> UInt64 {
        max(splitMix64Finalised(session &+ 0x9E37_79B9_7F4A_7C15), 1)
    }

    /// SplitMix64's finaliser: every bit of `value` moves every bit of the result.
    ///
    /// - Parameter value: The value to mix.
    static func splitMix64Finalised(_ value: UInt64) -> UInt64 {
        var mixed = value
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
