@testable import Converge
import ConvergeTestSupport
import Testing

/// Joining two records of a writer's sessions that leave counters between them unknown
/// (a writer drops its runs below what some peer acknowledged): the join claims nothing of
/// those counters, yet keeps comparing what the earlier record knew. Review of ff8ac5d.
@Suite("Session records joined across a gap")
struct SessionRecordGapTests {
    static func sessions(_ runs: [(UInt64, UInt64)]) throws -> WriterSessions {
        try #require(WriterSessions(runs: runs.map { WriterSessions.Run(firstCounter: $0.0, session: $0.1) }))
    }

    static func record(_ runs: [(UInt64, UInt64)], through: UInt64) throws -> SessionRecord {
        try #require(SessionRecord(writer: "w", runs: try sessions(runs), through: through))
    }

    /// X knew session A issued counters 1…10, then heard a record starting at 20 (B). The
    /// join names A for 1…10, nobody for 11…19, B from 20. Against Y, which took a restored
    /// copy's counters 5…8 under session C, it still disagrees at 5 (before the gap was
    /// kept, X forgot A and accepted Y's copy writes); against Z, which knows the true
    /// session D of 12…19, it agrees (before the gap was marked, A claimed 11…19 and X and
    /// Z refused each other for good: mesh device-restore seed 175).
    @Test func aJoinAcrossAGapComparesWhatItKnowsAndClaimsNothingOfTheGap() throws {
        let (a, b, c, d): (UInt64, UInt64, UInt64, UInt64) = (11, 22, 33, 44)
        let joined = try Self.record([(1, a)], through: 10).continued(by: try Self.record([(20, b)], through: 25))
        #expect(joined.through == 25)
        #expect(joined.runs.session(at: 5) == a && joined.runs.session(at: 10) == a)
        #expect(joined.runs.session(at: 11) == nil && joined.runs.session(at: 19) == nil)
        #expect(joined.runs.session(at: 20) == b && joined.runs.session(at: 25) == b)
        let y = try Self.record([(1, a), (5, c)], through: 8)
        #expect(joined.firstDisagreement(with: y) == 5 && y.firstDisagreement(with: joined) == 5)
        let z = try Self.record([(1, a), (12, d), (20, b)], through: 25)
        #expect(joined.firstDisagreement(with: z) == nil && z.firstDisagreement(with: joined) == nil)
        // Without a gap the runs simply continue.
        let contiguous = try Self.record([(1, a)], through: 19).continued(by: try Self.record([(20, b)], through: 25))
        #expect(contiguous.runs == (try Self.sessions([(1, a), (20, b)])))
        // A later record over the gap leaves one unknown run, not two in a row.
        let again = joined.continued(by: try Self.record([(30, c)], through: 31))
        #expect(again.runs.runs.filter { $0.session == WriterSessions.unknownSession }.count == 2)
        #expect(WriterSessions(runs: again.runs.runs) != nil)
    }

    /// A relayed record starts at the first run whose session it knows: a receiver would take
    /// a leading unknown run as overriding what it knows of those counters.
    @Test func aRelayedRecordNeverStartsWithAnUnknownRun() throws {
        let joined = try Self.record([(1, 1), (3, 2), (5, 3)], through: 6)
            .continued(by: try Self.record([(9, 4), (11, 5), (13, 6)], through: 14))
        #expect(joined.runs.runs.map(\.firstCounter) == [1, 3, 5, 7, 9, 11, 13])
        let relayed = joined.relayed
        #expect(relayed.runs.runs.map(\.firstCounter) == [9, 11, 13] && relayed.through == 14)
        #expect(relayed.runs.runs.allSatisfy { $0.session != WriterSessions.unknownSession })
    }

    /// The review's trap: a record reaching the largest counter, relayed twice, overflowed
    /// the join's arithmetic. Counters above ``Dot/maximumCounter`` in a record or its runs
    /// are refused when decoded; one at the maximum, taken twice, changes nothing and traps
    /// nothing.
    @Test func aRecordAtTheLargestCounterNeitherTrapsNorIsTakenBeyondIt() throws {
        let clock = ManualClock()
        let laptop = ReplicatedKeyValueStore(replicaID: "laptop", clock: clock)
        for through in [Dot.maximumCounter, Dot.maximumCounter + 1, UInt64.max] {
            var gossip = SyncGossip(account: .default, sender: "mallory",
                                    delta: ReplicatedMap.Delta(entries: [:], context: VersionVector()), wantsReply: false)
            gossip.recipient = "laptop"
            gossip.relayedSessions = [try Self.record([(1, 7)], through: through)]
            let bytes = try SyncMessage.gossip(gossip).encoded()
            for _ in 0..<2 {
                if through > Dot.maximumCounter {
                    #expect(malformedProblem { try laptop.receive(bytes) } == .outOfRange)
                } else {
                    _ = try laptop.receive(bytes)
                }
            }
        }
        var runs = BinaryWriter()
        runs.writeVarint(1)
        runs.writeVarint(Dot.maximumCounter + 1)
        runs.writeFixed64(7)
        var reader = BinaryReader(runs.bytes)
        #expect(throws: ConvergeError.self) { _ = try WriterSessions(from: &reader) }
    }
}
