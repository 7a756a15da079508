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
    package enum Lane: Hashable, Sendable, Comparable {
        case hub
        case device(Int)
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
    }

    /// One message.
    package struct Message: Sendable {
        /// The network's number of the message.
        package var id: Int
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

extension Simulation {
    /// Records a message the network was given, if a timeline is being recorded.
    func recordSent(_ bytes: [UInt8], from: Node, to: Node, outcome: SimulatedNetwork.Sending) {
        guard timeline != nil else { return }
        let kind: String
        if options.topology == .folder {
            kind = "file"
        } else {
            switch try? SyncMessage(encoded: bytes) {
            case .push?: kind = "push"
            case .poll?: kind = "poll"
            case .reply?: kind = "reply"
            case .upToDate?: kind = "up-to-date"
            case .gossip?: kind = "gossip"
            case nil: kind = "unreadable"
            }
        }
        var message = SimulationTimeline.Message(id: -1, from: Self.lane(from), to: Self.lane(to), sentMs: now, kind: kind,
                                                 bytes: bytes.count, fate: .sent, copies: 0)
        switch outcome {
        case .droppedByFault: message.fate = .droppedByFault
        case .droppedByFullQueue: message.fate = .droppedByFullQueue
        case .lost: message.fate = .lost
        case .inFlight(let id, let delays):
            message.id = id
            message.copies = delays.count
            timeline!.indexByID[id] = timeline!.messages.count
        }
        timeline!.messages.append(message)
    }

    /// Records the arrival of a copy of message `id`.
    func recordArrival(of id: Int, delivered: Bool) {
        guard timeline != nil, let index = timeline!.indexByID[id] else { return }
        timeline!.messages[index].arrivals.append(SimulationTimeline.Arrival(atMs: now, delivered: delivered))
    }

    /// Records the keys that became conflicted on `node` since its last change.
    func recordConflicts(on node: Node) {
        guard timeline != nil else { return }
        let lane = Self.lane(node)
        let held: Set<String>
        switch node {
        case .hub: held = Set(hub.accountIDs.flatMap { account in hub.state(of: account).entries.filter { $0.value.count > 1 }.map(\.key) })
        case .device(let d): held = Set(devices[d].store.conflictedKeys)
        }
        let new = held.subtracting(timeline!.conflicted[lane] ?? [])
        timeline!.conflicted[lane] = held
        if !new.isEmpty {
            timeline!.conflicts.append(SimulationTimeline.Conflict(lane: lane, atMs: now, keys: new.sortedByUTF8()))
        }
    }

    static func lane(_ node: Node) -> SimulationTimeline.Lane {
        switch node {
        case .hub: return .hub
        case .device(let d): return .device(d)
        }
    }
}
