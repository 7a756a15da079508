@_spi(Testing) import Converge  // the broken hub variants
import Foundation

/// Everything a run needs: the resolved options, the plan (operations and faults), where
/// network decisions come from, and an optional broken variant. A trace records all of
/// it, so ``SimulationInput`` is what `replay` and `shrink` rebuild.
public struct SimulationInput: Sendable {
    public var seed: UInt64
    public var options: SimulationOptions
    public var plan: [TimedEvent]
    /// Recorded network decisions, or `nil` to draw them from the seed.
    public var recordedFates: [Int: NetworkFate]?
    public var variant: BrokenVariant?
    /// For ``BrokenVariant/nondeterministic`` only: a source of ambient randomness the
    /// caller injects (the simulator itself never reads any).
    public var ambientJitter: (@Sendable () -> Int)?

    public init(seed: UInt64, options: SimulationOptions, plan: [TimedEvent], recordedFates: [Int: NetworkFate]? = nil,
                variant: BrokenVariant? = nil) {
        self.seed = seed
        self.options = options
        self.plan = plan
        self.recordedFates = recordedFates
        self.variant = variant
    }

    /// The input of a fresh run: options resolved from the scenario and the seed, the
    /// plan drawn from the seed.
    public init(scenario: Scenario, seed: UInt64, variant: BrokenVariant? = nil) throws(ScenarioError) {
        let options = try scenario.resolved(seed: seed)
        self.init(seed: seed, options: options, plan: PlanGenerator.plan(for: options, seed: seed), variant: variant)
    }
}

/// The outcome of one run.
public struct SimulationResult: Sendable {
    public var seed: UInt64
    public var options: SimulationOptions
    public var variant: BrokenVariant?
    public var converged: Bool
    /// Every checker failure, in the order found.
    public var violations: [String]
    public var metrics: JSON
    public var digest: String
    /// The network decisions the run used, by message (for the trace).
    public var fates: [Int: NetworkFate]

    public var passed: Bool { violations.isEmpty }
}

/// One deterministic simulation run: the real store, sync state machines and policies,
/// driven by virtual time and one seed on one thread.
///
/// A run has a safety phase (the plan's operations and faults; invariants checked after
/// every step) and a liveness phase (every fault healed, a clean network; all replicas
/// must converge within the options' bound). Checkers: convergence, quota, no lost write,
/// CRDT laws on sampled states; ``SimulationRunner`` adds determinism.
public final class Simulation {
    enum Node: Hashable {
        case hub
        case device(Int)
    }

    enum Event {
        case planned(Int)
        case deliver(message: Int)
        case periodicSync(device: Int)
        case flush(device: Int)
        case restart(device: Int)
        case partitionEnd(id: Int)
        case offlineEnd(device: Int, id: Int)
        case hubOutageEnd(id: Int)
        case accountBack(device: Int)
        case heal
        case livenessCheck
    }

    struct Message {
        var from: Node
        var to: Node
        var bytes: [UInt8]
        var copiesLeft: Int
    }

    struct Partition {
        var devices: Set<Int>
        var oneWay: Bool
    }

    static let baseMilliseconds = 1_700_000_000_000
    static let secondAccount: AccountID = "second"

    let input: SimulationInput
    let options: SimulationOptions
    let quota: Quota
    var devices: [SimulatedDevice] = []
    var hub: HubSyncMachine
    var queue = EventQueue<Event>()
    var now = 0
    var messages: [Int: Message] = [:]
    var nextMessageID = 0
    var inFlightTo: [Node: Int] = [:]
    var partitions: [Int: Partition] = [:]
    var hubOutages: Set<Int> = []
    var nextFaultID = 0
    var healed = false
    var healTime = 0
    var finished = false
    var decisions: any NetworkDecisions
    var usedFates: [Int: NetworkFate] = [:]
    var digest = RunDigest()
    var eventsProcessed = 0
    var ledger = WriteLedger()
    var metrics = MetricsCollector()
    var violations: [String] = []
    var livenessMs: Int?

    public init(_ input: SimulationInput) {
        self.input = input
        options = input.options
        quota = options.quota
        var hub = HubSyncMachine(hubID: "hub", quota: input.variant == .unenforcedQuota ? .unlimited : options.quota,
                                 policies: MergePolicies(default: Self.policy(named: options.policy)),
                                 retirementIntervalMilliseconds: UInt64(options.retirementMs))
        hub._forgetsCompensatingWrites = input.variant == .forgetfulHub
        hub._collectsBeforeStable = input.variant == .earlyCollection
        self.hub = hub
        if let recorded = input.recordedFates {
            decisions = RecordedNetworkDecisions(fates: recorded, defaultDelayMs: options.minLatencyMs)
        } else {
            decisions = RandomNetworkDecisions(seed: input.seed, options: options)
        }
        for index in 0..<options.devices {
            var policy = Self.policy(named: options.policy)
            if input.variant == .readerDependentPolicy && index % 2 == 1 {
                policy = options.policy == "multi-value" ? .lastWriterWins : .multiValue
            }
            devices.append(SimulatedDevice(index: index, quota: quota, policies: MergePolicies(default: policy)))
        }
    }

    static func policy(named name: String) -> MergePolicy {
        MergePolicy.named(name) ?? .lastWriterWins
    }

    // MARK: Running

    /// Runs both phases and every checker.
    public func run() -> SimulationResult {
        for (index, timed) in input.plan.enumerated() { queue.schedule(.planned(index), at: timed.timeMs) }
        let end = input.plan.last?.timeMs ?? 0
        for index in devices.indices {
            let jitter = input.variant == .nondeterministic ? input.ambientJitter?() ?? 0 : 0
            queue.schedule(.periodicSync(device: index), at: 1 + index * options.syncIntervalMs / max(devices.count, 1) + jitter)
        }
        queue.schedule(.heal, at: end + 1)
        while !finished, let (time, event) = queue.pop() {
            now = time
            handle(event)
            eventsProcessed += 1
            if eventsProcessed % 256 == 0 { checkLawsOnSampledStates() }
        }
        if livenessMs == nil && !finished {
            violations.append("the run ended before the replicas converged")
        }
        checkAfterConvergence()
        let converged = livenessMs != nil
        for device in devices { digest.update(device.store.replicatedState.encoded()) }
        for account in hub.accountIDs { digest.update(hub.state(of: account).encoded()) }
        let metricsJSON = metrics.json(simulation: self)
        digest.update(metricsJSON.serialized())
        for violation in violations { digest.update(violation) }
        return SimulationResult(seed: input.seed, options: options, variant: input.variant, converged: converged,
                                violations: violations, metrics: metricsJSON, digest: digest.hex, fates: usedFates)
    }

    func handle(_ event: Event) {
        switch event {
        case .planned(let index):
            digest.update(index)
            perform(input.plan[index].event)
        case .deliver(let id):
            deliver(id)
        case .periodicSync(let d):
            synchronize(d)
            let jitter = input.variant == .nondeterministic ? input.ambientJitter?() ?? 0 : 0
            queue.schedule(.periodicSync(device: d), at: now + options.syncIntervalMs + jitter)
        case .flush(let d):
            devices[d].flushScheduled = false
            flush(d)
        case .restart(let d):
            restart(d)
        case .partitionEnd(let id):
            partitions[id] = nil
        case .offlineEnd(let d, let id):
            devices[d].offline.remove(id)
        case .hubOutageEnd(let id):
            hubOutages.remove(id)
        case .accountBack(let d):
            if devices[d].store.account != .default && !devices[d].crashed { switchAccount(d, to: .default) }
        case .heal:
            heal()
        case .livenessCheck:
            if let difference = convergenceDifference() {
                if now - healTime > options.livenessBoundMs {
                    violations.append("liveness: not converged \(options.livenessBoundMs) ms after healing: \(difference)")
                    finished = true
                } else {
                    queue.schedule(.livenessCheck, at: now + options.syncIntervalMs)
                }
            } else {
                livenessMs = now - healTime
                finished = true
            }
        }
    }

    // MARK: Planned events

    func perform(_ event: PlannedEvent) {
        switch event {
        case .set(let d, let key, let bytes):
            guard !devices[d].crashed else { metrics.operationsOnCrashedDevices += 1; return }
            metrics.sets += 1
            let account = devices[d].store.account
            let prefix = "\(account.rawValue)|d\(d)|\(metrics.sets)|"
            let text = prefix + String(repeating: ".", count: max(0, bytes - prefix.utf8.count))
            write(.string(text), forKey: keyName(key), on: d)
        case .remove(let d, let key):
            guard !devices[d].crashed else { metrics.operationsOnCrashedDevices += 1; return }
            metrics.removes += 1
            write(nil, forKey: keyName(key), on: d)
        case .synchronize(let d):
            metrics.explicitSyncs += 1
            synchronize(d)
        case .read(let d, let key):
            guard !devices[d].crashed else { metrics.operationsOnCrashedDevices += 1; return }
            metrics.reads += 1
            if let value = devices[d].store.value(forKey: keyName(key)) { digest.update(value.encoded()) }
        case .partition(let group, let oneWay, let duration):
            let id = nextFaultID
            nextFaultID += 1
            partitions[id] = Partition(devices: Set(group), oneWay: oneWay)
            if oneWay { metrics.oneWayPartitions += 1 } else { metrics.partitions += 1 }
            queue.schedule(.partitionEnd(id: id), at: now + duration)
        case .offline(let d, let duration):
            let id = nextFaultID
            nextFaultID += 1
            devices[d].offline.insert(id)
            metrics.offlinePeriods += 1
            if duration > options.retirementMs { metrics.longAbsences += 1 }
            queue.schedule(.offlineEnd(device: d, id: id), at: now + duration)
        case .hubOutage(let duration):
            let id = nextFaultID
            nextFaultID += 1
            hubOutages.insert(id)
            metrics.hubOutages += 1
            queue.schedule(.hubOutageEnd(id: id), at: now + duration)
        case .crash(let d, let down):
            guard !devices[d].crashed else { return }
            crash(d)
            queue.schedule(.restart(device: d), at: now + down)
        case .switchAccount(let d, let duration):
            guard !devices[d].crashed, devices[d].store.account == .default else { return }
            switchAccount(d, to: Self.secondAccount)
            queue.schedule(.accountBack(device: d), at: now + duration)
        case .clock(let d, let offset, let drift):
            devices[d].clockOffsetMs = offset
            devices[d].clockDriftPpm = drift
        }
    }

    /// A device's reading of physical time: virtual time with its offset and drift.
    func setClock(_ d: Int) {
        let drifted = now + Int((Double(now) * Double(devices[d].clockDriftPpm) / 1_000_000).rounded())
        devices[d].clock.set(milliseconds: UInt64(max(0, Self.baseMilliseconds + drifted + devices[d].clockOffsetMs)))
    }

    func write(_ value: Value?, forKey key: String, on d: Int) {
        setClock(d)
        let store = devices[d].store
        let account = store.account
        let before = store.siblings(forKey: key)
        let shown = store.value(forKey: key)
        let usageBefore = store.usage
        do {
            try store.setValue(value, forKey: key)
        } catch {
            metrics.writesRefused += 1
            return
        }
        let usageAfter = store.usage
        if options.topology == .mesh && !quota.admits(usageBefore)
            && (usageAfter.keyCount > usageBefore.keyCount || usageAfter.valueBytes > usageBefore.valueBytes) {
            violations.append("quota: \(devices[d].id) accepted a write of \(key) that grows usage while over the soft quota")
        }
        guard let written = store.siblings(forKey: key).first(where: { $0.dot.replica == devices[d].id && !before.contains($0) })
        else { return }
        let index = ledger.record(account: account, device: d, key: key, dot: written.dot, hasValue: value != nil, timeMs: now)
        devices[d].unflushedWrites.append(index)
        ledger.markSuperseded(before.map(\.dot), account: account)
        metrics.recordResolution(superseded: before, shown: shown, ledger: ledger, account: account)
        observeContext(d)
        scheduleFlush(d)
        digest.update(written.dot.description)
    }

    func scheduleFlush(_ d: Int) {
        guard !devices[d].flushScheduled else { return }
        devices[d].flushScheduled = true
        queue.schedule(.flush(device: d), at: now + options.flushIntervalMs)
    }

    func flush(_ d: Int) {
        guard !devices[d].crashed else { return }
        devices[d].disk.flush()
        for index in devices[d].unflushedWrites { ledger.writes[index].durable = true }
        devices[d].unflushedWrites.removeAll()
    }

    func crash(_ d: Int) {
        metrics.crashes += 1
        devices[d].crashed = true
        devices[d].disk.crash()
        for index in devices[d].unflushedWrites {
            metrics.writesLostInCrashes += 1
            ledger.forget(index)
        }
        devices[d].unflushedWrites.removeAll()
    }

    func restart(_ d: Int) {
        guard devices[d].crashed else { return }
        setClock(d)
        do {
            try devices[d].reopen()
        } catch {
            violations.append("storage: \(devices[d].id) could not reopen its disk after a crash: \(error)")
        }
        devices[d].crashed = false
        devices[d].flushScheduled = false
    }

    func switchAccount(_ d: Int, to account: AccountID) {
        let store = devices[d].store
        devices[d].cachedStates[store.account] = store.replicatedState
        do {
            try store.switchAccount(to: account)
        } catch {
            violations.append("storage: \(devices[d].id) could not switch account: \(error)")
            return
        }
        devices[d].hubMachine.switchAccount(to: account)
        devices[d].meshMachine.switchAccount(to: account)
        metrics.accountSwitches += 1
        scheduleFlush(d)
        checkNoLeak(devices[d].store.replicatedState, account: account, at: "\(devices[d].id) after switching to \(account)")
    }

    // MARK: Sync

    func synchronize(_ d: Int) {
        guard !devices[d].crashed else { return }
        guard devices[d].offline.isEmpty || healed else { metrics.syncsWhileOffline += 1; return }
        if input.variant != .sendsBeforeFlush { flush(d) }
        let device = devices[d]
        let state = device.store.replicatedState
        switch options.topology {
        case .hub:
            let request: SyncMessage = input.variant == .guessingSender
                ? .push(SyncPush(account: device.hubMachine.account, device: device.id, delta: state.delta(for: state.context)))
                : device.hubMachine.request(from: state)
            send(request, from: .device(d), to: .hub)
        case .mesh:
            guard devices.count > 1 else { return }
            let peer = (d + 1 + devices[d].meshRound % (devices.count - 1)) % devices.count
            devices[d].meshRound += 1
            send(.gossip(gossip(from: d, to: peer, state: state, wantsReply: true)), from: .device(d), to: .device(peer))
        }
    }

    func gossip(from d: Int, to peer: Int, state: ReplicatedMap, wantsReply: Bool) -> SyncGossip {
        let device = devices[d]
        if input.variant == .guessingSender {
            return SyncGossip(account: device.meshMachine.account, sender: device.id, delta: state.delta(for: state.context),
                              wantsReply: wantsReply)
        }
        return device.meshMachine.gossip(to: devices[peer].id, from: state, wantsReply: wantsReply)
    }

    func linkIsUp(from: Node, to: Node) -> Bool {
        if healed { return true }
        for node in [from, to] {
            switch node {
            case .hub: if !hubOutages.isEmpty { return false }
            case .device(let d): if devices[d].crashed || !devices[d].offline.isEmpty { return false }
            }
        }
        for partition in partitions.values {
            let fromInside = { if case .device(let d) = from { return partition.devices.contains(d) } else { return false } }()
            let toInside = { if case .device(let d) = to { return partition.devices.contains(d) } else { return false } }()
            if partition.oneWay ? (fromInside && !toInside) : (fromInside != toInside) { return false }
        }
        return true
    }

    func send(_ message: SyncMessage, from: Node, to: Node) {
        let bytes: [UInt8]
        do { bytes = try message.encoded() } catch {
            violations.append("sync: a message could not be encoded: \(error)")
            return
        }
        let id = nextMessageID
        nextMessageID += 1
        metrics.messagesSent += 1
        metrics.bytesSent += bytes.count
        digest.update(bytes.count)
        let fate: NetworkFate
        if healed {
            fate = NetworkFate(delaysMs: [options.minLatencyMs])
        } else {
            fate = decisions.fate(ofMessage: id)
            usedFates[id] = fate
        }
        guard linkIsUp(from: from, to: to) else { metrics.messagesDroppedByFaults += 1; return }
        guard inFlightTo[to, default: 0] < options.queueCapacity else { metrics.messagesDroppedByFullQueues += 1; return }
        guard !fate.delaysMs.isEmpty else { metrics.messagesLost += 1; return }
        if fate.delaysMs.count > 1 { metrics.messagesDuplicated += fate.delaysMs.count - 1 }
        messages[id] = Message(from: from, to: to, bytes: bytes, copiesLeft: fate.delaysMs.count)
        inFlightTo[to, default: 0] += 1
        for delay in fate.delaysMs { queue.schedule(.deliver(message: id), at: now + max(0, delay)) }
    }

    func deliver(_ id: Int) {
        guard var message = messages[id] else { return }
        message.copiesLeft -= 1
        if message.copiesLeft == 0 {
            messages[id] = nil
            inFlightTo[message.to, default: 1] -= 1
        } else {
            messages[id] = message
        }
        guard linkIsUp(from: message.from, to: message.to) else { metrics.messagesDroppedByFaults += 1; return }
        digest.update(id)
        digest.update(message.bytes)
        let decoded: SyncMessage
        do { decoded = try SyncMessage(encoded: message.bytes) } catch {
            violations.append("sync: a message the simulator sent does not decode: \(error)")
            return
        }
        switch (decoded, message.to) {
        case (.push, .hub), (.poll, .hub):
            var compensations: [HubCompensation] = []
            guard let answer = hub.receive(decoded, nowMilliseconds: UInt64(Self.baseMilliseconds + now), compensations: &compensations)
            else { return }
            for compensation in compensations {
                metrics.quotaCompensations += 1
                ledger.markCompensated(compensation.superseded, account: compensation.account)
            }
            if case .reply(let reply) = answer {
                if reply.kind == .fullState { metrics.fullStateReplies += 1 }
                checkHubQuota(account: reply.account)
            } else {
                metrics.upToDateAnswers += 1
            }
            guard case .device(let d) = message.from else { return }
            send(answer, from: .hub, to: .device(d))
        case (.upToDate, .device):
            return
        case (.reply(let reply), .device(let d)):
            guard let accepted = devices[d].hubMachine.receive(reply) else { return }
            setClock(d)
            do { try devices[d].store.apply(accepted) } catch {
                violations.append("storage: \(devices[d].id) could not apply a reply: \(error)")
            }
            if !accepted.rejectedKeys.isEmpty { metrics.quotaViolationNotices += 1 }
            observeContext(d)
            scheduleFlush(d)
        case (.gossip(let incoming), .device(let d)):
            guard let accepted = devices[d].meshMachine.receive(incoming) else { return }
            setClock(d)
            do { try devices[d].store.merge(accepted.delta) } catch {
                violations.append("storage: \(devices[d].id) could not merge gossip: \(error)")
            }
            observeContext(d)
            scheduleFlush(d)
            if accepted.wantsReply, let peer = devices.firstIndex(where: { $0.id == accepted.sender }) {
                if input.variant != .sendsBeforeFlush { flush(d) }
                send(.gossip(gossip(from: d, to: peer, state: devices[d].store.replicatedState, wantsReply: false)),
                     from: .device(d), to: .device(peer))
            }
        default:
            violations.append("sync: a message reached the wrong kind of node")
        }
    }

    /// Records which writes of the default account a device now holds (for propagation
    /// latency).
    func observeContext(_ d: Int) {
        guard devices[d].store.account == .default else { return }
        let context = devices[d].store.replicatedState.context
        for (replica, counter) in context.sortedEntries where counter > devices[d].observed[replica] {
            for c in (devices[d].observed[replica] + 1)...counter {
                if let latency = ledger.observe(Dot(replica: replica, counter: c), by: d, deviceCount: devices.count, now: now) {
                    metrics.propagationLatencies.append(latency)
                }
            }
        }
        devices[d].observed.formUnion(context)
    }

    // MARK: Liveness

    func heal() {
        healed = true
        healTime = now
        partitions.removeAll()
        hubOutages.removeAll()
        for d in devices.indices {
            devices[d].offline.removeAll()
            if devices[d].crashed { restart(d) }
        }
        queue.schedule(.livenessCheck, at: now + options.syncIntervalMs)
    }
}
