/// The pointwise minimum of the members' acknowledged contexts, and what each member
/// acknowledged of its own writes, kept up to date by difference: what a
/// ``StabilityTracker`` needs from one round of acknowledgements
/// (``StabilityTracker/observe(minimum:witnessed:)``).
///
/// Computing the minimum afresh costs a lookup per member and replica, at every push to a
/// hub: about 2.4 million at 1,540 members. Here a member whose acknowledgement changed
/// (``set(_:to:)``) costs a lookup per replica of its old and new contexts. Per replica it
/// keeps the minimum and how many members sit at it; only when the last of them moves up is
/// the replica scanned across the members again, which every member must have acknowledged
/// past, so the scan is paid for by as many acknowledgements.
///
/// The minimum and what the members witnessed are kept as version vectors beside the
/// counts, each changed where a member's acknowledgement moved it, so that reading them
/// costs nothing (building them afresh sorted every replica, at every push).
///
/// A replica absent from a context counts as 0. Nothing here depends on the order of a
/// dictionary.
struct AcknowledgedMinimum: Sendable {
    /// Each member's acknowledged context, as of the last round.
    private(set) var acknowledged: [ReplicaID: VersionVector] = [:]
    /// For every replica any member has acknowledged a write of: the lowest counter any
    /// member acknowledged (0 for a member that names none) and how many members hold it.
    /// Its counters change through ``setLowest(_:to:)`` only, which keeps ``minimum``
    /// beside them.
    private var lowest: [ReplicaID: (counter: UInt64, members: Int)] = [:]
    /// The pointwise minimum of the acknowledged contexts: the non-zero counters of `lowest`.
    private(set) var minimum = VersionVector()
    /// What each member acknowledged of its own writes.
    private(set) var witnessed = VersionVector()
    /// Broken on purpose, for the test that shows the comparison with a fresh minimum
    /// catches it: when the last member at a replica's minimum moves up, keeps the old
    /// minimum instead of scanning for the new one (too low: collection stalls).
    var _neverRescans = false

    /// Takes one round of acknowledgements, one per member (every member listed), comparing
    /// each with the last round's: O(*m* · *r*) when the contexts are equal but not shared.
    /// ``set(_:to:)`` and ``remove(_:)`` take what is known to have changed.
    mutating func update(to round: [ReplicaID: VersionVector]) {
        for member in acknowledged.keys where round[member] == nil { remove(member) }
        for (member, context) in round { set(member, to: context) }
    }

    /// Takes `member`'s acknowledgement (a member that joins, or one that acknowledged anew).
    mutating func set(_ member: ReplicaID, to context: VersionVector) {
        if let old = acknowledged[member] {
            if old != context { change(member, from: old, to: context) }
        } else {
            add(member, context)
        }
    }

    /// Forgets `member` (one that left).
    mutating func remove(_ member: ReplicaID) {
        guard let context = acknowledged.removeValue(forKey: member) else { return }
        witnessed.set(member, to: 0)
        if acknowledged.isEmpty {
            lowest = [:]
            minimum = VersionVector()
            return
        }
        for (replica, low) in lowest where context[replica] == low.counter {
            if low.members > 1 { lowest[replica]!.members -= 1 } else { rescan(replica) }
        }
    }

    private mutating func add(_ member: ReplicaID, _ context: VersionVector) {
        let others = acknowledged.count
        acknowledged[member] = context
        for (replica, low) in lowest {
            let counter = context[replica]
            if counter < low.counter {
                setLowest(replica, to: (counter, 1))
            } else if counter == low.counter {
                lowest[replica]!.members += 1
            }
        }
        for (replica, counter) in context.entries where lowest[replica] == nil {
            // Every other member names none of this replica's writes: they sit at 0.
            setLowest(replica, to: others == 0 ? (counter, 1) : (0, others))
        }
        witnessed.set(member, to: context[member])
    }

    private mutating func change(_ member: ReplicaID, from old: VersionVector, to new: VersionVector) {
        acknowledged[member] = new
        VersionVector.walk(old, new) { replica, before, after in
            if before != after { move(replica, from: before, to: after) }
        }
        witnessed.set(member, to: new[member])
    }

    /// One member's counter for `replica` went from `old` to `new` (they differ).
    private mutating func move(_ replica: ReplicaID, from old: UInt64, to new: UInt64) {
        guard var low = lowest[replica] else {
            // A replica no member named before: the others sit at 0.
            let others = acknowledged.count - 1
            setLowest(replica, to: others == 0 ? (new, 1) : (0, others))
            return
        }
        if old == low.counter { low.members -= 1 }
        if new < low.counter {
            low = (new, 1)
        } else if new == low.counter {
            low.members += 1
        }
        setLowest(replica, to: low)
        if low.members == 0 { rescan(replica) }
    }

    /// Recomputes the minimum for `replica` across every member.
    private mutating func rescan(_ replica: ReplicaID) {
        if _neverRescans, let stale = lowest[replica], !acknowledged.isEmpty {
            lowest[replica] = (stale.counter, 1)
            return
        }
        var low: (counter: UInt64, members: Int) = (.max, 0)
        for context in acknowledged.values {
            let counter = context[replica]
            if counter < low.counter {
                low = (counter, 1)
            } else if counter == low.counter {
                low.members += 1
            }
        }
        setLowest(replica, to: low.members == 0 ? nil : low)
    }

    /// Sets the lowest counter of `replica` and how many members hold it (`nil`: no member
    /// names it), and the replica's counter in ``minimum`` with it.
    private mutating func setLowest(_ replica: ReplicaID, to low: (counter: UInt64, members: Int)?) {
        let before = if let low { lowest.updateValue(low, forKey: replica) } else { lowest.removeValue(forKey: replica) }
        if before?.counter != low?.counter { minimum.set(replica, to: low?.counter ?? 0) }
    }
}
