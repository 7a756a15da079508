/// The network model: which links are up (partitions, offline periods, hub outages), what
/// happens to each message (lost, delayed, duplicated, held back: a ``NetworkFate`` from
/// the seed or a trace), and bounded queues (a node has at most `queueCapacity` messages
/// in flight to it; more are dropped).
///
/// It moves bytes and nothing else: what the bytes mean is the business of the hub and
/// the devices. Delivery times are the caller's to schedule.
struct SimulatedNetwork {
    /// An end of a link.
    enum Node: Hashable {
        case hub
        case device(Int)
    }

    /// A sender and a receiver.
    struct Link: Hashable {
        var from: Node
        var to: Node
    }

    /// A message in flight.
    struct Message {
        var from: Node
        var to: Node
        var bytes: [UInt8]
        /// Deliveries still to come (two for a duplicated message).
        var copiesLeft: Int
        /// Cut on the way: its receiver lost power since it was sent (see ``cutMessages(to:)``).
        var cut = false
        /// Sent by a process that has since lost its disk to an older copy (see
        /// ``orphanMessages(from:)``): it arrives, but an answer has nowhere to go.
        var orphaned = false
        /// Which message it is on its link.
        var decided: MessageID
    }

    /// A group of devices cut off from everything else; with `oneWay`, only what they send
    /// is lost.
    struct Partition {
        var devices: Set<Int>
        var oneWay: Bool
    }

    /// What became of a message sent.
    enum Sending {
        /// A fault cut the link (a partition, an offline period, an outage, a crash).
        case droppedByFault
        /// The receiver already had `queueCapacity` messages in flight.
        case droppedByFullQueue
        /// The network lost it.
        case lost
        /// It is message `id`, to be delivered after each of `delaysMs`.
        case inFlight(id: Int, delaysMs: [Int])
    }

    /// A message sent: which it is on its link, and what became of it.
    struct Sent {
        var id: MessageID
        var outcome: Sending
    }

    /// What became of one delivery of a message.
    enum Delivery {
        /// The message is unknown or all its copies were delivered.
        case none
        /// A fault cut the link while it travelled.
        case droppedByFault
        case delivered(Message)
    }

    private var decisions: any NetworkDecisions
    /// The network decisions the run used, by message (for the trace).
    private(set) var usedFates: [MessageID: NetworkFate] = [:]
    private var messages: [Int: Message] = [:]
    /// The number of the next message, for the run's bookkeeping of messages in flight.
    private var nextMessageID = 0
    /// The number of the next message on each link, for the decisions (``MessageID``).
    private var nextNumberOnLink: [Link: Int] = [:]
    private var inFlightTo: [Node: Int] = [:]
    private var partitions: [Int: Partition] = [:]
    private var hubOutages: Set<Int> = []
    /// The offline periods in progress, by device (they may overlap).
    private var offline: [Int: Set<Int>] = [:]
    private var nextFaultID = 0
    let queueCapacity: Int
    /// The latency of every message once the network is healed.
    let healedLatencyMs: Int
    /// Whether every fault is over for good (the liveness phase).
    private(set) var healed = false

    init(decisions: any NetworkDecisions, queueCapacity: Int, healedLatencyMs: Int) {
        self.decisions = decisions
        self.queueCapacity = queueCapacity
        self.healedLatencyMs = healedLatencyMs
    }

    // MARK: Faults

    mutating func startPartition(of devices: [Int], oneWay: Bool) -> Int {
        partitions[nextFaultID] = Partition(devices: Set(devices), oneWay: oneWay)
        return newFaultID()
    }

    mutating func endPartition(_ id: Int) { partitions[id] = nil }

    mutating func startOffline(device: Int) -> Int {
        offline[device, default: []].insert(nextFaultID)
        return newFaultID()
    }

    mutating func endOffline(_ id: Int, device: Int) { offline[device]?.remove(id) }

    mutating func startHubOutage() -> Int {
        hubOutages.insert(nextFaultID)
        return newFaultID()
    }

    mutating func endHubOutage(_ id: Int) { hubOutages.remove(id) }

    private mutating func newFaultID() -> Int {
        nextFaultID += 1
        return nextFaultID - 1
    }

    /// Whether device `d` is in an offline period (before healing).
    func isOffline(_ d: Int) -> Bool { !healed && !(offline[d]?.isEmpty ?? true) }

    /// Ends every fault for good: from now on every link is up and every message arrives
    /// once, after ``healedLatencyMs``, unless a partial heal still loses it.
    mutating func heal() {
        healed = true
        partitions.removeAll()
        hubOutages.removeAll()
        offline.removeAll()
    }

    /// Whether a message from `from` reaches `to` now; `crashed` says which devices are
    /// down.
    func linkIsUp(from: Node, to: Node, crashed: (Int) -> Bool) -> Bool {
        if healed { return true }
        for node in [from, to] {
            switch node {
            case .hub: if !hubOutages.isEmpty { return false }
            case .device(let d): if crashed(d) || isOffline(d) { return false }
            }
        }
        for partition in partitions.values {
            let fromInside = { if case .device(let d) = from { return partition.devices.contains(d) } else { return false } }()
            let toInside = { if case .device(let d) = to { return partition.devices.contains(d) } else { return false } }()
            if partition.oneWay ? (fromInside && !toInside) : (fromInside != toInside) { return false }
        }
        return true
    }

    // MARK: Messages

    /// Sends `bytes`: draws the message's fate (every message gets a number on its link
    /// and a fate, delivered or not, so the decisions of a trace line up), then checks the
    /// link, the receiver's queue and the fate.
    mutating func send(_ bytes: [UInt8], from: Node, to: Node, crashed: (Int) -> Bool) -> Sent {
        let link = Link(from: from, to: to)
        let decided = MessageID(from: Self.lane(from), to: Self.lane(to), number: nextNumberOnLink[link, default: 0])
        nextNumberOnLink[link] = decided.number + 1
        let fate: NetworkFate
        if healed {
            fate = decisions.healedFate(ofMessage: decided, latencyMs: healedLatencyMs)
            // A healed network delivers once after the healed latency: any other fate (a loss
            // of a partial heal, or a decision a trace or a shrunk trace carried over) is a
            // decision the trace must record, or its replay would deliver cleanly.
            if fate.delaysMs != [healedLatencyMs] { usedFates[decided] = fate }
        } else {
            fate = decisions.fate(ofMessage: decided)
            usedFates[decided] = fate
        }
        guard linkIsUp(from: from, to: to, crashed: crashed) else { return Sent(id: decided, outcome: .droppedByFault) }
        guard inFlightTo[to, default: 0] < queueCapacity else { return Sent(id: decided, outcome: .droppedByFullQueue) }
        guard !fate.delaysMs.isEmpty else { return Sent(id: decided, outcome: .lost) }
        let id = nextMessageID
        nextMessageID += 1
        messages[id] = Message(from: from, to: to, bytes: bytes, copiesLeft: fate.delaysMs.count, decided: decided)
        inFlightTo[to, default: 0] += 1
        return Sent(id: decided, outcome: .inFlight(id: id, delaysMs: fate.delaysMs))
    }

    /// The lane of `node` in pictures and traces.
    static func lane(_ node: Node) -> SimulationTimeline.Lane {
        switch node {
        case .hub: .hub
        case .device(let d): .device(d)
        }
    }

    /// Cuts every message on its way to `node`, which lost power: the connections they
    /// travel on are gone, so no copy arrives, even after it restarts. (A reply computed for
    /// what a device held before its disk was restored from an older copy would otherwise
    /// claim writes it no longer holds.)
    mutating func cutMessages(to node: Node) {
        for id in messages.keys where messages[id]!.to == node { messages[id]!.cut = true }
    }

    /// Marks every message on its way from `node` as orphaned: the process that sent it is
    /// gone (its disk was replaced by an older copy), so the connection an answer would take
    /// back is gone too. The message itself still arrives. (An answer computed for what the
    /// device held before would otherwise reach the restored store and claim writes it no
    /// longer holds.)
    mutating func orphanMessages(from node: Node) {
        for id in messages.keys where messages[id]!.from == node { messages[id]!.orphaned = true }
    }

    /// The receiver of message `id`, while a copy is still to arrive.
    func receiver(of id: Int) -> Node? { messages[id]?.to }

    /// One copy of message `id` arrives, if the link is still up.
    mutating func deliver(_ id: Int, crashed: (Int) -> Bool) -> Delivery {
        guard var message = messages[id] else { return .none }
        message.copiesLeft -= 1
        if message.copiesLeft == 0 {
            messages[id] = nil
            inFlightTo[message.to, default: 1] -= 1
        } else {
            messages[id] = message
        }
        guard !message.cut, linkIsUp(from: message.from, to: message.to, crashed: crashed) else { return .droppedByFault }
        return .delivered(message)
    }
}
