import Converge

/// Every option of one run, resolved: what the simulator runs with, and what a trace
/// records so that a replay needs nothing else.
///
/// Options come from a ``Scenario`` (``Scenario/resolved(seed:)``), which checks each one
/// against the option table: its name in scenario files, its range, its default and its
/// help are written once, there (`converge-sim options` prints them).
public struct SimulationOptions: Hashable, Sendable {
    /// The name of the scenario the options come from.
    public var scenarioName: String
    /// The names of the options drawn from the seed, in the table's order.
    public package(set) var derived: [String] = []

    /// Number of devices.
    public package(set) var devices = 0
    /// How devices sync: through a hub, or gossiping in a mesh.
    public package(set) var topology = SyncTopology.hub
    /// The merge policy of every key.
    public package(set) var policy = PolicyName.lww
    /// Workload operations in the safety phase.
    public package(set) var operations = 0
    /// Mean virtual time between two operations.
    public package(set) var operationIntervalMs = 0
    /// Relative frequency of a set.
    public package(set) var setWeight = 0
    /// Relative frequency of a remove.
    public package(set) var removeWeight = 0
    /// Relative frequency of an explicit synchronize.
    public package(set) var syncWeight = 0
    /// Relative frequency of a read.
    public package(set) var readWeight = 0
    /// Distinct keys the workload uses.
    public package(set) var keys = 0
    /// How popular each key is.
    public package(set) var keyDistribution = KeyDistribution.uniform
    /// The exponent of the Zipf popularity.
    public package(set) var zipfExponent = 0.0
    /// The smallest value written, in bytes.
    public package(set) var minValueBytes = 0
    /// The largest value written, in bytes.
    public package(set) var maxValueBytes = 0
    /// The distribution of message latency.
    public package(set) var latency = LatencyDistribution.uniform
    /// The smallest latency.
    public package(set) var minLatencyMs = 0
    /// The largest latency (uniform), or the minimum plus the mean (exponential).
    public package(set) var maxLatencyMs = 0
    /// The probability that a message is lost.
    public package(set) var loss = 0.0
    /// The probability that a message is delivered twice.
    public package(set) var duplicate = 0.0
    /// The probability that a message is held back (up to ten times the latency).
    public package(set) var reorder = 0.0
    /// Messages in flight to one node; more are dropped.
    public package(set) var queueCapacity = 0
    /// Symmetric partitions: a group cut off from the rest.
    public package(set) var partitions = 0
    /// One-way partitions: what a group sends is lost.
    public package(set) var oneWayPartitions = 0
    /// The length of a partition.
    public package(set) var partitionMs = 0
    /// Periods a device is offline.
    public package(set) var offlinePeriods = 0
    /// The length of an offline period.
    public package(set) var offlineMs = 0
    /// Periods the hub is down.
    public package(set) var hubOutages = 0
    /// The length of a hub outage.
    public package(set) var hubOutageMs = 0
    /// Hub crashes: the hub is down for `hubOutageMs`, loses what it held in memory (its
    /// connections and the messages on them), and restarts from its durable state.
    public package(set) var hubCrashes = 0
    /// Hub restores: a backup of the hub's durable state is taken, and later the hub loses its
    /// state and restarts from that older copy after `hubOutageMs`.
    public package(set) var hubRestores = 0
    /// Device crashes, in which what the disk has not made durable is lost.
    public package(set) var crashes = 0
    /// How long a crashed device stays down.
    public package(set) var restartMs = 0
    /// Device restores: a backup of a device's disk is taken, and later the device powers off
    /// and restarts, after `restartMs`, from that older copy of its disk.
    public package(set) var deviceRestores = 0
    /// Device clones: a device powers off and restarts, after `restartMs`, from a copy of
    /// another device's disk, under that device's replica ID.
    public package(set) var deviceClones = 0
    /// Periods a device's disk is full: every save fails, and the store must refuse what it
    /// cannot save and change nothing.
    public package(set) var diskFullPeriods = 0
    /// The length of a disk-full period.
    public package(set) var diskFullMs = 0
    /// How often a device's disk makes its writes durable.
    public package(set) var flushIntervalMs = 0
    /// The largest clock offset of a device, either way.
    public package(set) var clockSkewMs = 0
    /// The largest clock drift, in parts per million.
    public package(set) var clockDriftPpm = 0
    /// Devices whose clock runs ``aheadMs`` ahead.
    public package(set) var aheadDevices = 0
    /// How far ahead the clocks of ``aheadDevices`` run.
    public package(set) var aheadMs = 0
    /// Times a device's clock jumps (an NTP step, a user setting the time), each by up to
    /// ``clockJumpMs`` backwards or forwards, from then on.
    public package(set) var clockJumps = 0
    /// The largest clock jump.
    public package(set) var clockJumpMs = 0
    /// Devices that switch to the second account and back.
    public package(set) var accountSwitches = 0
    /// The silence after which the hub retires a device.
    public package(set) var retirementMs = 0
    /// Devices silent past retirement that come back.
    public package(set) var returns = 0
    /// Quota: most keys.
    public package(set) var quotaKeys = 0
    /// Quota: most bytes of values in total.
    public package(set) var quotaTotalBytes = 0
    /// Quota: most bytes of one value.
    public package(set) var quotaValueBytes = 0
    /// Quota: most bytes of a key.
    public package(set) var quotaKeyBytes = 0
    /// How often each device synchronizes by itself.
    public package(set) var syncIntervalMs = 0
    /// The time after healing within which every replica must have converged.
    public package(set) var livenessBoundMs = 0
    /// A quiet tail: how long after the last operation the faults go on (loss, partitions
    /// and offline periods in progress) with only the devices' own syncs, before the heal.
    public package(set) var quietTailMs = 0
    /// A partial heal: the probability a message is still lost once every link is up again
    /// (the liveness phase must converge through it).
    public package(set) var healedLoss = 0.0
    /// The probability that a delivered copy of a message or file has one bit flipped on
    /// the way, before the heal: the receiver must refuse it (its CRC-32C no longer matches).
    public package(set) var corruptMessages = 0.0
    /// The largest shared-folder file a device writes; a larger snapshot is written in
    /// parts (folder topology).
    public package(set) var folderFileBytes = 0
    /// The largest request a device sends the hub and the largest reply the hub makes;
    /// larger changes and full states travel in pages (hub topology).
    public package(set) var hubMessageBytes = 0

    /// Options with every value at zero or its first case; ``Scenario/resolved(seed:)``
    /// sets every one from the table.
    init(scenarioName: String) {
        self.scenarioName = scenarioName
    }

    /// The quota every replica and the hub enforce.
    public var quota: Quota {
        Quota(maximumKeyCount: quotaKeys, maximumTotalValueBytes: quotaTotalBytes,
              maximumValueBytes: quotaValueBytes, maximumKeyBytes: quotaKeyBytes)
    }

    /// One line per option, `name = value`, derived ones marked.
    package var summaryLines: [String] {
        SimulationOptionTable.specs.map { spec in
            "  \(spec.name) = \(spec.value(in: self))" + (derived.contains(spec.name) ? "   (derived from the seed)" : "")
        }
    }
}

/// How popular each key of the workload is.
public enum KeyDistribution: String, CaseIterable, Hashable, Sendable {
    /// Every key equally.
    case uniform
    /// Key 0 the most popular, with ``SimulationOptions/zipfExponent``.
    case zipf
}

/// The distribution of message latency.
public enum LatencyDistribution: String, CaseIterable, Hashable, Sendable {
    /// Uniform between the least and the largest latency.
    case uniform
    /// The least latency plus an exponential delay.
    case exponential
}

/// The merge policies a run can use, by their command-line names.
public enum PolicyName: String, CaseIterable, Hashable, Sendable {
    /// `MergePolicy.lastWriterWins`.
    case lww
    /// `MergePolicy.replicaPriority(_:)` (by replica ID).
    case priority
    /// `MergePolicy.addWins`.
    case addWins = "add-wins"
    /// `MergePolicy.removeWins`.
    case removeWins = "remove-wins"
    /// `MergePolicy.multiValue`.
    case multiValue = "multi-value"

    /// The policy itself.
    public var policy: MergePolicy {
        MergePolicy.named(rawValue) ?? .lastWriterWins
    }
}
