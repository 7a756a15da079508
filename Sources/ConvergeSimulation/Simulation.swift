@_spi(Testing) import Converge  // the broken hub variants

/// One deterministic simulation run: the real store, sync state machines and policies,
/// driven by virtual time and one seed on one thread.
///
/// A run has a safety phase (the plan's operations and faults; invariants checked after
/// every step) and a liveness phase (every fault healed, a clean network; all replicas
/// must converge within the options' bound). Checkers: convergence, quota, no lost write,
/// CRDT laws on sampled states; ``SimulationRunner`` adds determinism.
///
/// Where things are, one concern per file:
/// - `Simulation+EventLoop.swift`: the event loop (`run()`, one `step` per event);
/// - `Simulation+Workload.swift`: the app's operations (set, remove, read, synchronize);
/// - `Simulation+Faults.swift`: partitions, offline periods, hub outages, crashes,
///   account switches, clocks, device restores and clones, and healing;
/// - `Simulation+Incarnations.swift`: a device that finds its counters reused (a restored or
///   cloned disk) and continues under a new writer ID, as the model sees it;
/// - `SimulatedNetwork.swift` and `Simulation+Delivery.swift`: the network model, and
///   sending and delivering sync messages;
/// - `Simulation+HubSync.swift` and `Simulation+DeviceSync.swift`: what the hub and a
///   device do with the sync messages they receive;
/// - `SimulatedFolder.swift` and `Simulation+FolderSync.swift`: the folder topology, where
///   devices run the real shared-folder transport over a folder whose files the network
///   carries to each other device;
/// - `WriteLedger.swift` and `Simulation+Propagation.swift`: every write of the run, and
///   when each reached every device;
/// - `Simulation+Checkers.swift` and `Simulation+Invariants.swift`: the checkers, and the
///   invariant checks after every step;
/// - `ReferenceModel.swift` and `Simulation+ReferenceModel.swift`: the oracle, written apart
///   from the system's merge code, and the checks that hold every replica to it;
/// - `BrokenVariant.swift`: the deliberately broken variants and the hooks they change.
public final class Simulation {
    static let baseMilliseconds = 1_700_000_000_000
    static let secondAccount: AccountID = "second"

    let input: SimulationInput
    let options: SimulationOptions
    let quota: Quota
    /// What the run's broken variant (if any) changes.
    let hooks: VariantHooks
    var devices: [SimulatedDevice] = []
    var hub: HubSyncMachine
    var network: SimulatedNetwork
    /// While the hub is down after a crash: each account's durable state, to restart from.
    var hubDurableState: [(account: AccountID, bytes: [UInt8])]?
    /// The hub's last backup: each account's durable state when it was taken.
    var hubBackup: [(account: AccountID, bytes: [UInt8])]?
    /// Each device's last disk backup (`state` `nil`: the disk held nothing durable yet), with
    /// the replica ID the device had then (a clone changes it).
    var deviceBackups: [Int: (state: StoredState?, replicaID: ReplicaID)] = [:]
    /// The shared folder of the folder topology (empty in the others).
    let folder = SimulatedFolder()
    /// The folder's files the network is carrying, by message: the file it delivers.
    var fileDeliveries: [Int: [String]] = [:]
    /// The files in the folder the reference model follows, in write order.
    var publishedFiles: [PublishedFile] = []
    /// The reference model's number for the next file written (negative: apart from the
    /// network's message numbers).
    var nextFileMessage = -1
    var queue = EventQueue<Event>()
    var now = 0
    var healTime = 0
    var finished = false
    var digest = RunDigest()
    var eventsProcessed = 0
    /// How many times the invariants were checked after a step (every step in debug
    /// builds, none in release builds).
    package internal(set) var invariantChecks = 0
    /// The replicas the current step changed, for the checks after it.
    var changedThisStep: [SimulatedNetwork.Node] = []
    /// What happened when, if recorded (see ``recordTimeline()``).
    var timeline: SimulationTimeline?
    var ledger = WriteLedger()
    /// What every replica must hold, from what the simulator observed (the oracle).
    var model = ReferenceModel()
    /// The model's kinds of violation already reported while the run went on.
    var reportedModelKinds: Set<Violation.Kind> = []
    /// The sites ``report(_:once:)`` has reported (with the violation's index), and how
    /// often each fired again (by that index).
    var reportedSites: [String: Int] = [:]
    var repeatedViolations: [Int: Int] = [:]
    var metrics = MetricsCollector()
    var violations: [Violation] = []
    var livenessMs: Int?

    /// A run of `input`, ready to ``run()``: its devices, hub and network set up, nothing
    /// run yet. Run it once.
    public init(_ input: SimulationInput) {
        self.input = input
        options = input.options
        quota = options.quota
        hooks = VariantHooks(input.variant, ambientJitter: input.ambientJitter)
        hub = Self.makeHub(options: options, hooks: hooks, policy: input.customPolicy)
        // Mesh devices, and readers of a shared folder that twins under one replica ID write,
        // take a store's writes before it finds its counters reused; a hub finds it first.
        model.copiesStandIn = options.topology != .hub
        let decisions: any NetworkDecisions
        if let recorded = input.recordedFates {
            decisions = RecordedNetworkDecisions(fates: recorded, defaultDelayMs: options.minLatencyMs)
        } else {
            decisions = RandomNetworkDecisions(seed: input.seed, options: options)
        }
        network = SimulatedNetwork(decisions: decisions, queueCapacity: options.queueCapacity,
                                   healedLatencyMs: options.minLatencyMs)
        for index in 0..<options.devices {
            let policy = input.customPolicy ?? hooks.readPolicy(ofDevice: index, configured: options.policy)
            var device = SimulatedDevice(index: index, quota: quota, policies: MergePolicies(default: policy),
                                         hubRequestBytes: options.hubMessageBytes)
            device.removesAreNoOps = hooks.removesAreNoOps
            device.accountSwitchDropsOwnOnlyKeys = hooks.accountSwitchDropsOwnOnlyKeys
            device.disk.dropsSavesWhenFull = hooks.diskDropsSavesWhenFull
            device.accountSwitchKeepsOldData = hooks.accountSwitchKeepsOldData
            device.accountSwitchForgetsOldData = hooks.accountSwitchForgetsOldData
            device.growsWhileOverQuota = hooks.storesGrowWhileOverQuota
            device.joinKeepsOwnSiblings = hooks.storesJoinKeepingOwnSiblings
            device.ignoresReusedCounters = hooks.storesIgnoreReusedCounters
            device.meshIgnoresWriterSessions = hooks.meshIgnoresWriterSessions
            device.resolvesRelativeRepliesBlindly = hooks.storesResolveRelativeRepliesBlindly
            device.breakStore()
            devices.append(device)
        }
    }

    /// The hub of a run, as it starts (and restarts after a crash): with the broken
    /// behaviours of the run's variant, if any.
    static func makeHub(options: SimulationOptions, hooks: VariantHooks, policy custom: MergePolicy?) -> HubSyncMachine {
        var hub = HubSyncMachine(hubID: "hub", quota: hooks.hubQuota(options.quota),
                                 policies: MergePolicies(default: custom ?? options.policy.policy),
                                 retirementIntervalMilliseconds: UInt64(options.retirementMs))
        hub.maximumClockOffsetMilliseconds = SimulatedDevice.clockOffsetTolerance
        hub.maximumReplyBytes = options.hubMessageBytes
        hub._forgetsCompensatingWrites = hooks.hubForgetsCompensatingWrites
        hub._collectsBeforeStable = hooks.hubCollectsBeforeStable
        hub._revertsKeysEndingIn3 = hooks.hubRevertsKeysEndingIn3
        hub._pagesClaimWholeContext = hooks.hubPagesClaimWholeContext
        hub._skipsRepair = hooks.hubSkipsRepair
        hub._ignoresWriterSessions = hooks.hubIgnoresWriterSessions
        return hub
    }

    /// Whether the faults are over (the liveness phase): the network is clean and every
    /// device up.
    var healed: Bool { network.healed }
}
