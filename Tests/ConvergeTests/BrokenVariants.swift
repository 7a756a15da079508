import Converge
import ConvergeTestSupport

/// Deliberately broken map operations: each property test must catch at least one.
enum BrokenVariants {
    /// A join that prefers the left side's siblings for keys both sides have (and never
    /// prunes): not commutative.
    static let leftBiasedJoin = MapAlgebra(join: { left, right in
        let entries = right.entries.merging(left.entries) { ours, _ in ours }
        return try! ReplicatedMap(entries: entries, context: left.context.union(right.context))
    })

    /// A join that keeps the left context only: forgets what the right side has seen.
    static let leftContextJoin = MapAlgebra(join: { left, right in
        var joined = left
        joined.join(right)
        return try! ReplicatedMap(entries: joined.entries.mapValues { $0.filter { left.context.contains($0.dot) } }.filter { !$0.value.isEmpty },
                                  context: left.context)
    })

    /// A join that drops siblings both sides have (it forgets the "other side also has
    /// it" clause): not idempotent.
    static let forgetfulJoin = MapAlgebra(join: { left, right in
        var entries: [String: [Sibling]] = [:]
        for key in Set(left.entries.keys).union(right.entries.keys) {
            let ours = left.siblings(forKey: key).filter { !right.context.contains($0.dot) }
            let theirs = right.siblings(forKey: key).filter { !left.context.contains($0.dot) }
            let merged = (ours + theirs).sorted { $0.dot < $1.dot }
            if !merged.isEmpty { entries[key] = merged }
        }
        return try! ReplicatedMap(entries: entries, context: left.context.union(right.context))
    })

    /// A delta that leaves out tombstones, so removals never travel.
    static let tombstoneDroppingDelta = MapAlgebra(delta: { sender, peer in
        let full = sender.delta(for: peer)
        let entries = full.entries.mapValues { $0.filter { !$0.isTombstone } }.filter { !$0.value.isEmpty }
        return ReplicatedMap.Delta(entries: entries, context: full.context)
    })

    /// A sender that guesses the peer has everything it has itself, instead of using
    /// what the peer reported.
    static let guessingSender = MapAlgebra(delta: { sender, _ in sender.delta(for: sender.context) })

    /// A receiver that takes the entries but not the sender's context: it learns only
    /// the dots it is sent, never what the sender saw overwritten.
    static let contextIgnoringReceiver = MapAlgebra(apply: { state, delta in
        var sentDots = VersionVector()
        for siblings in delta.entries.values { for sibling in siblings { sentDots.raise(sibling.dot.replica, to: sibling.dot.counter) } }
        state.apply(ReplicatedMap.Delta(entries: delta.entries, context: sentDots))
    })

    /// Collects tombstones below the pointwise maximum of contexts: before anyone else
    /// has seen them.
    static let eagerCollection = MapAlgebra(stableFrontier: { _, contexts in
        contexts.values.reduce(VersionVector()) { $0.union($1) }
    })

    /// Collects below the pointwise minimum of contexts at once: every replica has the
    /// tombstone, but a concurrent value may still be unknown to some (the one-phase rule
    /// that ``StabilityTracker`` exists to avoid).
    static let singlePhaseCollection = MapAlgebra(stableFrontier: { _, contexts in
        let all = Array(contexts.values)
        return all.dropFirst().reduce(all.first ?? VersionVector()) { $0.intersection($1) }
    })

    /// A policy that depends on who reads: each replica prefers its own writes.
    static func readerBiasedPolicy(reader: Int) -> MergePolicy {
        .custom("reader-biased") { siblings in
            (siblings.first { $0.dot.replica == History.replicaID(reader) } ?? siblings.last!).value
        }
    }
}

