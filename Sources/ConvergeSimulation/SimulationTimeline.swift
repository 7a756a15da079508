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

extension Simulation {
    /// Records a message the network was given, if a timeline is being recorded.
    func recordSent(_ bytes: [UInt8], from: Node, to: Node, sent: SimulatedNetwork.Sent) {
        guard timeline != nil else { return }
        let kind: String
        var carries: String?
        if options.topology == .folder {
            kind = "file"
        } else {
            switch try? SyncMessage(encoded: bytes) {
            case .push(let push)?:
                kind = "push"
                carries = Self.describe(push.delta, account: push.account, as: push.fullStateKeys == nil ? nil : "repairs the hub")
            case .poll?: kind = "poll"
            case .reply(let reply)?:
                kind = "reply"
                carries = Self.describe(reply.delta, account: reply.account, as: reply.kind == .fullState ? "full state" : nil)
            case .upToDate?: kind = "up-to-date"
            case .gossip(let gossip)?:
                kind = "gossip"
                carries = Self.describe(gossip.delta, account: gossip.account)
            case nil: kind = "unreadable"
            }
        }
        var message = SimulationTimeline.Message(id: -1, link: sent.id, from: sent.id.from, to: sent.id.to, sentMs: now, kind: kind,
                                                 bytes: bytes.count, fate: .sent, copies: 0, momentsBefore: timeline!.moments.count,
                                                 carries: carries)
        switch sent.outcome {
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

    /// The writes a delta carries, in words: at most four keys, then how many more; `role`
    /// first if the message has one (a full state, a repair).
    static func describe(_ delta: ReplicatedMap.Delta, account: AccountID, as role: String? = nil) -> String? {
        guard !delta.entries.isEmpty else { return role }
        let keys = delta.entries.keys.sortedByUTF8()
        var told = keys.prefix(4).map { key in
            let siblings = delta.entries[key] ?? []
            return "\(key) " + siblings.map { $0.isTombstone ? "removed by \($0.dot)" : "= \($0.dot)" }.joined(separator: " | ")
        }
        if keys.count > 4 { told.append("\(keys.count - 4) more key\(keys.count == 5 ? "" : "s")") }
        return (role.map { "\($0): " } ?? "") + (account == .default ? "" : "in \(account.rawValue): ") + told.joined(separator: ", ")
    }

    /// Records a moment, if a timeline is being recorded; returns its index.
    @discardableResult
    func recordMoment(_ text: @autoclosure () -> String) -> Int? {
        guard timeline != nil else { return nil }
        timeline!.moments.append(SimulationTimeline.Moment(atMs: now, text: text()))
        return timeline!.moments.count - 1
    }

    /// Records planned event `event` before it is performed; `finish` (called after it)
    /// adds the dot a write got, or that the store refused it.
    func recordPlanned(_ event: PlannedEvent) -> (() -> Void)? {
        guard timeline != nil else { return nil }
        let writesBefore = ledger.writes.count
        let refusedBefore = metrics.writesRefused
        let index = timeline!.moments.count
        timeline!.moments.append(SimulationTimeline.Moment(atMs: now, text: Self.describe(event, keyName: keyName)))
        switch event {
        case .set(let d, _, _), .remove(let d, _):
            return { [self] in
                if devices[d].crashed {
                    timeline!.moments[index].text += ": the device is down"
                } else if ledger.writes.count > writesBefore, let write = ledger.writes.last {
                    timeline!.moments[index].text += " as \(write.dot)"
                } else if metrics.writesRefused > refusedBefore {
                    timeline!.moments[index].text += ": refused"
                } else {
                    timeline!.moments[index].text += ": accepted, but the store made no write"
                }
            }
        default:
            return nil
        }
    }

    /// A planned event in words.
    static func describe(_ event: PlannedEvent, keyName: (Int) -> String) -> String {
        switch event {
        case .set(let d, let key, let bytes): "d\(d) writes \(keyName(key)) (\(bytes) bytes)"
        case .remove(let d, let key): "d\(d) removes \(keyName(key))"
        case .synchronize(let d): "d\(d) syncs"
        case .read(let d, let key): "d\(d) reads \(keyName(key))"
        case .partition(let group, let oneWay, let ms):
            "\(group.map { "d\($0)" }.joined(separator: ", ")) cut off\(oneWay ? " (what they send is lost)" : "") for \(ms) ms"
        case .offline(let d, let ms): "d\(d) goes offline for \(ms) ms"
        case .hubOutage(let ms): "the hub is unreachable for \(ms) ms"
        case .hubCrash(let ms): "the hub crashes, down \(ms) ms"
        case .hubBackup: "the hub's state is backed up"
        case .hubRestore(let ms): "the hub loses its state, down \(ms) ms, to restart from the backup"
        case .crash(let d, let ms): "d\(d) crashes, down \(ms) ms"
        case .switchAccount(let d, let ms): "d\(d) switches to the second account for \(ms) ms"
        case .clock(let d, let offset, let drift): "d\(d)'s clock is \(offset) ms off, drifting \(drift) ppm"
        case .diskFull(let d, let ms): "d\(d)'s disk is full for \(ms) ms"
        case .clockJump(let d, let by): "d\(d)'s clock jumps \(by) ms"
        }
    }

    /// Records what every replica holds, at the end of the run.
    func recordHoldings() {
        guard timeline != nil else { return }
        func lines(_ state: ReplicatedMap, prefix: String) -> [String] {
            state.entries.keys.sortedByUTF8().map { key in
                let siblings = state.siblings(forKey: key)
                if siblings.allSatisfy(\.isTombstone) {
                    return "\(prefix)\(key) removed by \(siblings.map(\.dot.description).joined(separator: " | "))"
                }
                return "\(prefix)\(key) = " + siblings.map { $0.isTombstone ? "removed by \($0.dot)" : $0.dot.description }.joined(separator: " | ")
            }
        }
        var holdings: [SimulationTimeline.Lane: [String]] = [:]
        if options.topology == .hub {
            holdings[.hub] = hub.accountIDs.sorted { $0.rawValue.utf8.lexicographicallyPrecedes($1.rawValue.utf8) }.flatMap { account in
                lines(hub.state(of: account), prefix: account == .default ? "" : "\(account.rawValue)/")
            }
        }
        for d in devices.indices {
            let store = devices[d].store
            holdings[.device(d)] = lines(store.replicatedState, prefix: store.account == .default ? "" : "\(store.account.rawValue)/")
        }
        timeline!.holdings = holdings
    }

    /// What a message may change at `node`, to tell whether it changed anything: each
    /// account's context and key count (an account that holds nothing, as the hub's record
    /// of a device's first empty push, counts as none).
    func stateSignature(of node: Node) -> [String] {
        switch node {
        case .hub:
            return hub.accountIDs.filter { !hub.state(of: $0).context.isEmpty }
                .map { "\($0.rawValue) \(hub.state(of: $0).context) \(hub.state(of: $0).entries.count)" }.sortedByUTF8()
        case .device(let d):
            let state = devices[d].store.replicatedState
            return ["\(devices[d].store.account.rawValue) \(state.context) \(state.entries.count)"]
        }
    }

    /// Notes whether the last arrival of message `id` changed its receiver.
    func recordWhetherArrivalChanged(_ id: Int, _ changed: Bool) {
        guard timeline != nil, let index = timeline!.indexByID[id], !timeline!.messages[index].arrivals.isEmpty else { return }
        timeline!.messages[index].arrivals[timeline!.messages[index].arrivals.count - 1].changedReceiver = changed
    }

    /// Records the keys that became conflicted on `node` since its last change.
    func recordConflicts(on node: Node) {
        guard timeline != nil else { return }
        let lane = SimulatedNetwork.lane(node)
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
}
