import Converge

/// Recording a run's ``SimulationTimeline`` as it goes (when asked for): messages, moments,
/// conflicts and what each replica holds at the end.
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
        case .deviceBackup(let d): "d\(d)'s disk is backed up"
        case .deviceRestore(let d, let ms): "d\(d) powers off, down \(ms) ms, to restart from its disk's backup"
        case .deviceClone(let from, let to, let ms): "d\(to) powers off, down \(ms) ms, to restart from a copy of d\(from)'s disk"
        }
    }

    /// Notes why the receiver of the last arrival of message `id` took nothing of it.
    func recordRefusal(of id: Int, _ reason: SyncIgnoredReason) {
        guard timeline != nil, let index = timeline!.indexByID[id], !timeline!.messages[index].arrivals.isEmpty else { return }
        timeline!.messages[index].arrivals[timeline!.messages[index].arrivals.count - 1].refusal = Self.describe(reason)
    }

    /// A store's reason to take nothing of a message, in words.
    static func describe(_ reason: SyncIgnoredReason) -> String {
        switch reason {
        case .otherAccount(let account): "for account \(account.rawValue)"
        case .fromSelf: "from itself"
        case .unexpected: "unexpected"
        case .reusedCounters: "reused counters"
        case .otherIncarnation: "for another incarnation"
        case .staleReport: "stale report"
        case .staleRelativeReply: "relative to what it no longer holds"
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
