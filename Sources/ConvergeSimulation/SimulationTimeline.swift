import Converge

/// What happened when, for pictures of a run: every message with its sender, receiver,
/// kind, size and fate, every copy's arrival, the conflicts replicas saw, and when the
/// first violation was found. Recorded only when asked for
/// (`converge-sim view` does), as it costs time in every step.
///
/// The planned events (writes, faults) are in the run's input (its plan); the
/// timeline adds what the run made of them.
package struct SimulationTimeline: Sendable {
    /// A lane of the diagram: the hub, or a device by index.
    package enum Lane: Hashable, Sendable, Comparable, CustomStringConvertible {
        case hub
        case device(Int)

        /// `hub`, or `d` and the device's index (its replica ID in a run).
        package var description: String {
            switch self {
            case .hub: "hub"
            case .device(let d): "d\(d)"
            }
        }

        /// Reads what ``description`` writes; `nil` for anything else.
        package init?(_ text: String) {
            if text == "hub" {
                self = .hub
            } else if text.hasPrefix("d"), let d = Int(text.dropFirst()), d >= 0, "d\(d)" == text {
                self = .device(d)
            } else {
                return nil
            }
        }
    }

    /// What became of a message when it was sent.
    package enum Fate: String, Sendable {
        /// On its way (one copy or more; see ``Message/arrivals``).
        case sent
        /// Lost by the network.
        case lost
        /// Not sent: a partition, an outage, an offline or crashed end.
        case droppedByFault
        /// Not sent: the receiver's queue was full.
        case droppedByFullQueue
    }

    /// One arrival of a copy of a message.
    package struct Arrival: Sendable {
        /// When it arrived.
        package var atMs: Int
        /// Whether it was taken (`false`: a fault began while it travelled).
        package var delivered: Bool
        /// Whether the receiver's state changed when it took it (its context, its account or
        /// how many keys it holds).
        package var changedReceiver = false
        /// Why the receiving store took nothing of it, if it refused it (a store's
        /// ``SyncIgnoredReason`` in words: "reused counters", "stale report"…).
        package var refusal: String?
    }

    /// One message.
    package struct Message: Sendable {
        /// The network's number of the message, while it is in flight (-1: never was).
        package var id: Int
        /// The message on its link, as traces name it.
        package var link: MessageID
        /// Its sender.
        package var from: Lane
        /// Its receiver.
        package var to: Lane
        /// When it was sent.
        package var sentMs: Int
        /// What it is: push, poll, reply, up-to-date, gossip or file.
        package var kind: String
        /// Its size.
        package var bytes: Int
        /// What the network did with it.
        package var fate: Fate
        /// How many copies the network made (2 or more: duplicated).
        package var copies: Int
        /// Each copy's arrival, in time order.
        package var arrivals: [Arrival] = []
        /// How many ``SimulationTimeline/moments`` came before it was sent.
        package var momentsBefore = 0
        /// What it carries, in words (`k1 = d2:2, k5 removed by d0:1`), for a push, a reply
        /// or gossip that carries writes; its account if that is not the default.
        package var carries: String? = nil
    }

    /// Something a replica or the network did, in words: a planned event (a write with the
    /// dot it got, a sync, a fault), a restart, the heal.
    package struct Moment: Sendable {
        /// When it happened.
        package var atMs: Int
        /// What happened.
        package var text: String
    }

    /// A key left holding concurrent values on a replica.
    package struct Conflict: Sendable {
        /// The replica's lane.
        package var lane: Lane
        /// When the replica saw it.
        package var atMs: Int
        /// The keys that became conflicted then.
        package var keys: [String]
    }

    /// Every message, in the order sent.
    package var messages: [Message] = []
    /// Every moment, in the order it happened.
    package var moments: [Moment] = []
    /// What each replica held at the end, key by key (`k3 = d0:2`, `k4 = d1:1 | d0:3`,
    /// `k5 removed by d2:4`), keys in byte order; the hub's keys of another account than
    /// the default are prefixed with it.
    package var holdings: [Lane: [String]] = [:]
    /// Conflicts as replicas saw them, in time order.
    package var conflicts: [Conflict] = []
    /// When the network healed.
    package var healedMs: Int?
    /// When the first violation was found, if any.
    package var firstViolationMs: Int?
    /// When the run ended.
    package var endMs = 0
    /// Index of each message in ``messages``, by network number.
    var indexByID: [Int: Int] = [:]
    /// The conflicted keys each lane held after its last change.
    var conflicted: [Lane: Set<String>] = [:]
}
