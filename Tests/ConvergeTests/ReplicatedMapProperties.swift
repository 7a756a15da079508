import Converge
import ConvergeSimulation
import ConvergeTestSupport

/// The properties that make replicas converge, each a function of the map operations so
/// that the tests can run it on the real ones and on broken variants.
enum MapProperties {
    /// Cases per property in CI; `CONVERGE_PROPERTY_SCALE` multiplies them.
    static let defaultCases = 2_000

    static func joinIsCommutative(_ algebra: MapAlgebra, cases: Int = defaultCases) -> PropertyFailure? {
        checkProperty("joinIsCommutative", cases: cases,
                      generate: { History.generate(using: &$0) }, shrink: { $0.shrunk() }) { history in
            let run = HistoryRun(history)
            let (a, b) = (run.replicas[0], run.replicas[1])
            let ab = algebra.join(a, b)
            let ba = algebra.join(b, a)
            return ab == ba ? nil : "A⊔B = \(describe(ab)) but B⊔A = \(describe(ba))"
        }
    }

    static func joinIsAssociative(_ algebra: MapAlgebra, cases: Int = defaultCases) -> PropertyFailure? {
        checkProperty("joinIsAssociative", cases: cases,
                      generate: { History.generate(using: &$0, replicas: 3...4) }, shrink: { $0.shrunk() }) { history in
            let run = HistoryRun(history)
            let (a, b, c) = (run.replicas[0], run.replicas[1], run.replicas[2])
            let left = algebra.join(algebra.join(a, b), c)
            let right = algebra.join(a, algebra.join(b, c))
            return left == right ? nil : "(A⊔B)⊔C = \(describe(left)) but A⊔(B⊔C) = \(describe(right))"
        }
    }

    static func joinIsIdempotent(_ algebra: MapAlgebra, cases: Int = defaultCases) -> PropertyFailure? {
        checkProperty("joinIsIdempotent", cases: cases,
                      generate: { History.generate(using: &$0) }, shrink: { $0.shrunk() }) { history in
            let run = HistoryRun(history)
            for a in run.replicas {
                let aa = algebra.join(a, a)
                if aa != a { return "A⊔A = \(describe(aa)) but A = \(describe(a))" }
            }
            return nil
        }
    }

    /// Applying `delta(A, vv)` to B equals `B ⊔ A` whenever `vv` is a context B really
    /// had: its current one or any older one.
    static func deltaEqualsJoin(_ algebra: MapAlgebra, cases: Int = defaultCases) -> PropertyFailure? {
        checkProperty("deltaEqualsJoin", cases: cases,
                      generate: { ($0.next(below: 1_000), History.generate(using: &$0)) },
                      shrink: { input in input.1.shrunk().map { (input.0, $0) } },
                      describe: { "stale-context pick \($0.0), \($0.1)" }) { input in
            let run = HistoryRun(input.1)
            let (a, b) = (run.replicas[0], run.replicas[1])
            let expected = MapAlgebra.correct.join(b, a)
            let past = run.pastContexts[1]
            for reported in [b.context, past[input.0 % past.count]] {
                var received = b
                algebra.apply(&received, algebra.delta(a, reported))
                if received != expected {
                    return "B + delta(A, \(reported)) = \(describe(received)) but B⊔A = \(describe(expected))"
                }
            }
            return nil
        }
    }

    /// Any delivery order, with duplicates and losses, converges after a final exchange
    /// to the join of everything, with the same visible values under every policy.
    static func deliveryConverges(
        _ algebra: MapAlgebra, cases: Int = defaultCases,
        policies: [(Int) -> MergePolicy] = everyPolicy.map { policy in { _ in policy } }
    ) -> PropertyFailure? {
        checkProperty("deliveryConverges", cases: cases,
                      generate: { History.generate(using: &$0, replicas: 2...5, maximumOperations: 60) },
                      shrink: { $0.shrunk() }) { history in
            var run = HistoryRun(history, algebra: algebra)
            let everything = run.replicas.dropFirst().reduce(run.replicas[0]) { MapAlgebra.correct.join($0, $1) }
            run.heal()
            for (index, replica) in run.replicas.enumerated() where replica != everything {
                return "replica r\(index) = \(describe(replica)) but the join of all is \(describe(everything))"
            }
            for policyFor in policies {
                let reference = visibleValues(of: run.replicas[0], policy: policyFor(0))
                for index in run.replicas.indices.dropFirst() {
                    let seen = visibleValues(of: run.replicas[index], policy: policyFor(index))
                    if seen != reference {
                        return "under \(policyFor(index).name), r\(index) reads \(seen) but r0 reads \(reference)"
                    }
                }
            }
            return nil
        }
    }

    /// Tombstone collection below the stable frontier changes no visible value, now or
    /// after a final exchange, under every policy.
    static func collectionKeepsVisibleValues(_ algebra: MapAlgebra, cases: Int = defaultCases) -> PropertyFailure? {
        checkProperty("collectionKeepsVisibleValues", cases: cases,
                      generate: { History.generate(using: &$0, replicas: 2...4, maximumOperations: 60, collection: true) },
                      shrink: { $0.shrunk() }) { history in
            var collected = HistoryRun(history, algebra: algebra)
            var uncollected = HistoryRun(history, skipCollection: true)
            collected.heal()
            collected.run(.collect)
            collected.heal()
            uncollected.heal()
            for policy in everyPolicy {
                let expected = visibleValues(of: uncollected.replicas[0], policy: policy)
                for (index, replica) in collected.replicas.enumerated() {
                    let seen = visibleValues(of: replica, policy: policy)
                    if seen != expected {
                        return "with collection r\(index) reads \(seen) under \(policy.name); without, \(expected)"
                    }
                }
            }
            for (index, replica) in collected.replicas.enumerated() where replica != collected.replicas[0] {
                return "with collection r\(index) = \(describe(replica)) but r0 = \(describe(collected.replicas[0]))"
            }
            return nil
        }
    }

    static func describe(_ state: ReplicatedMap) -> String {
        let keys = state.entries.keys.sorted()
        return "{" + keys.map { "\($0): \(state.entries[$0]!.map(\.description).joined(separator: " | "))" }.joined(separator: ", ")
            + "} ctx \(state.context)"
    }
}
