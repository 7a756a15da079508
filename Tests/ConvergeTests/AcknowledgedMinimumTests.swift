@testable import Converge
import ConvergeSimulation
import ConvergeTestSupport
import Testing

/// The hub keeps the minimum of its members' acknowledgements by difference
/// (`AcknowledgedMinimum`); these compare it, round after round, with the minimum computed
/// afresh from every member's context, under joins, departures, acknowledgements that rise
/// (and, for a restored device, fall) and replicas that appear.
@Suite("Acknowledged minimum: kept by difference, equal to one computed afresh")
struct AcknowledgedMinimumTests {
    /// The minimum and the witnessed counters of one round, computed from scratch.
    static func fresh(_ round: [ReplicaID: VersionVector]) -> (minimum: VersionVector, witnessed: VersionVector) {
        var replicas: Set<ReplicaID> = []
        for context in round.values { replicas.formUnion(context.counterTable.keys) }
        var minimum: [ReplicaID: UInt64] = [:]
        for replica in replicas {
            let low = round.values.map { $0[replica] }.min() ?? 0
            if low > 0 { minimum[replica] = low }
        }
        var witnessed: [ReplicaID: UInt64] = [:]
        for (member, context) in round where context[member] > 0 { witnessed[member] = context[member] }
        return (VersionVector(minimum), VersionVector(witnessed))
    }

    /// Rounds of acknowledgements: members join and leave, and each round some members
    /// acknowledge more (rarely less), of replicas that include ones no member named before.
    static func rounds(using random: inout Xoshiro256StarStar) -> [[ReplicaID: VersionVector]] {
        let names: [ReplicaID] = (0..<random.next(in: 1...8)).map { ReplicaID("r\($0)")! }
        var current: [ReplicaID: VersionVector] = [:]
        var rounds: [[ReplicaID: VersionVector]] = []
        for _ in 0..<random.next(in: 1...40) {
            let member = random.element(of: names)
            switch random.next(below: 10) {
            case 0: current[member] = nil
            case 1: current[member] = VersionVector()
            default:
                var context = current[member] ?? VersionVector()
                for _ in 0..<random.next(in: 1...3) {
                    let replica = random.element(of: names)
                    if random.next(below: 8) == 0 {
                        var counters = context.counterTable
                        counters[replica] = UInt64(random.next(below: Int(context[replica]) + 1))
                        if counters[replica] == 0 { counters[replica] = nil }
                        context = VersionVector(counters)
                    } else {
                        context.raise(replica, to: context[replica] + UInt64(random.next(in: 1...3)))
                    }
                }
                current[member] = context
            }
            rounds.append(current)
        }
        return rounds
    }

    /// The first round where `minimum` disagrees with one computed afresh, described.
    static func disagreement(_ rounds: [[ReplicaID: VersionVector]], neverRescans: Bool = false) -> String? {
        var minimum = AcknowledgedMinimum()
        minimum._neverRescans = neverRescans
        for (index, round) in rounds.enumerated() {
            minimum.update(to: round)
            let expected = fresh(round)
            if minimum.minimum != expected.minimum || minimum.witnessed != expected.witnessed {
                return "round \(index) \(round.sorted { $0.key < $1.key }): minimum \(minimum.minimum), witnessed \(minimum.witnessed); afresh \(expected.minimum), \(expected.witnessed)"
            }
        }
        return nil
    }

    @Test func equalsTheMinimumComputedAfresh() {
        expectHolds(checkProperty("equalsTheMinimumComputedAfresh", cases: 2_000, generate: { Self.rounds(using: &$0) },
                                  shrink: { rounds in rounds.indices.dropLast().map { Array(rounds.prefix($0 + 1)) } },
                                  property: { Self.disagreement($0) }))
    }

    /// The comparison catches a minimum that never rescans: once the last member at a
    /// replica's minimum moves up, it stays too low.
    @Test func aMinimumThatNeverRescansIsCaught() {
        let rounds: [[ReplicaID: VersionVector]] = [
            ["a": VersionVector(["a": 1]), "b": VersionVector(["a": 1])],
            ["a": VersionVector(["a": 2]), "b": VersionVector(["a": 1])],
            ["a": VersionVector(["a": 2]), "b": VersionVector(["a": 2])],
        ]
        #expect(Self.disagreement(rounds) == nil)
        let caught = Self.disagreement(rounds, neverRescans: true)
        #expect(caught?.hasPrefix("round 2") == true)
    }
}
