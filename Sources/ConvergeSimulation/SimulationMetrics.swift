/// What one run measured, grouped as the JSON report prints it (`metrics`).
///
/// Quantiles and ratios are `nil` (JSON `null`) when there is nothing to measure: no
/// write reached every device, no key, no operation.
public struct SimulationMetrics: Codable, Hashable, Sendable {
    /// The workload's operations.
    public var operations = Operations()
    /// How fast replicas converged.
    public var convergence = Convergence()
    /// The sync traffic.
    public var network = Network()
    /// What the merge policy showed and hid.
    public var policy: Policy
    /// The replicas' final states.
    public var state = State()
    /// The quota's enforcement.
    public var quota = QuotaEnforcement()
    /// The faults injected.
    public var faults = Faults()
    /// What the checkers looked at.
    public var checks = Checks()

    /// Metrics of a run under `policy`, everything else zero.
    init(policy: PolicyName) { self.policy = Policy(name: policy.rawValue) }

    /// The workload's operations, by kind.
    public struct Operations: Codable, Hashable, Sendable {
        /// Sets performed.
        public var set = 0
        /// Removes performed.
        public var remove = 0
        /// Reads performed.
        public var read = 0
        /// Explicit synchronizations.
        public var synchronize = 0
        /// Local writes the store refused (over the quota).
        public var refusedByQuota = 0
        /// Operations planned on a device that was down, so not performed.
        public var onCrashedDevices = 0
    }

    /// How fast replicas converged.
    public struct Convergence: Codable, Hashable, Sendable {
        /// Virtual time from healing to convergence, or `nil` if the replicas did not converge.
        public var livenessMs: Int?
        /// Time from a write to the moment every device held it.
        public var propagationMs = Quantiles()
        /// Writes that reached every device.
        public var writesPropagated = 0
        /// Virtual time at the end of the run.
        public var virtualTimeMs = 0

        private enum CodingKeys: String, CodingKey { case livenessMs, propagationMs, writesPropagated, virtualTimeMs }

        /// Encodes every member, `null` for an absent one.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(livenessMs, forKey: .livenessMs)
            try container.encode(propagationMs, forKey: .propagationMs)
            try container.encode(writesPropagated, forKey: .writesPropagated)
            try container.encode(virtualTimeMs, forKey: .virtualTimeMs)
        }
    }

    /// Quantiles of a list of durations, `nil` when the list is empty.
    public struct Quantiles: Codable, Hashable, Sendable {
        /// The median.
        public var p50: Int?
        /// The 90th percentile.
        public var p90: Int?
        /// The 99th percentile.
        public var p99: Int?
        /// The largest.
        public var max: Int?

        private enum CodingKeys: String, CodingKey { case p50, p90, p99, max }

        /// The quantiles of `values`.
        init(of values: [Int] = []) {
            let sorted = values.sorted()
            func quantile(_ q: Double) -> Int? {
                sorted.isEmpty ? nil : sorted[Swift.min(sorted.count - 1, Int(Double(sorted.count) * q))]
            }
            p50 = quantile(0.5)
            p90 = quantile(0.9)
            p99 = quantile(0.99)
            max = sorted.last
        }

        /// Encodes every member, `null` for an absent one.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(p50, forKey: .p50)
            try container.encode(p90, forKey: .p90)
            try container.encode(p99, forKey: .p99)
            try container.encode(max, forKey: .max)
        }
    }

    /// The sync traffic.
    public struct Network: Codable, Hashable, Sendable {
        /// Messages sent.
        public var messages = 0
        /// Bytes sent.
        public var bytes = 0
        /// Messages sent per workload operation.
        public var messagesPerOperation: Double?
        /// Bytes sent per workload operation.
        public var bytesPerOperation: Double?
        /// Messages the network lost.
        public var lost = 0
        /// Extra copies the network delivered.
        public var duplicated = 0
        /// Messages dropped by partitions, offline periods, outages and crashes.
        public var droppedByFaults = 0
        /// Messages dropped because the receiver's queue was full.
        public var droppedByFullQueues = 0
        /// Synchronizations a device skipped because it was offline.
        public var syncsWhileOffline = 0
        /// Polls the hub answered with "up to date".
        public var upToDateAnswers = 0

        private enum CodingKeys: String, CodingKey {
            case messages, bytes, messagesPerOperation, bytesPerOperation, lost, duplicated, droppedByFaults,
                 droppedByFullQueues, syncsWhileOffline, upToDateAnswers
        }

        /// Encodes every member, `null` for an absent one.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(messages, forKey: .messages)
            try container.encode(bytes, forKey: .bytes)
            try container.encode(messagesPerOperation, forKey: .messagesPerOperation)
            try container.encode(bytesPerOperation, forKey: .bytesPerOperation)
            try container.encode(lost, forKey: .lost)
            try container.encode(duplicated, forKey: .duplicated)
            try container.encode(droppedByFaults, forKey: .droppedByFaults)
            try container.encode(droppedByFullQueues, forKey: .droppedByFullQueues)
            try container.encode(syncsWhileOffline, forKey: .syncsWhileOffline)
            try container.encode(upToDateAnswers, forKey: .upToDateAnswers)
        }
    }

    /// What the merge policy showed and hid.
    public struct Policy: Codable, Hashable, Sendable {
        /// The policy's command-line name.
        public var name: String
        /// Local writes that replaced two or more live siblings.
        public var conflictsResolvedByWrites = 0
        /// Live siblings the policy hid from the app before a write replaced them.
        public var lostUpdates = 0
        /// Of ``lostUpdates``, those written later (in true time) than every sibling shown:
        /// the mark of clock skew under last-writer-wins.
        public var lostUpdatesLaterInTrueTime = 0
        /// Local writes that replaced a live value and a concurrent removal of the same key:
        /// where add-wins and remove-wins differ (one showed the value, the other nothing).
        public var valueRemoveConflicts = 0

        /// Creates the counts of `name`, all zero.
        public init(name: String) { self.name = name }

        private enum CodingKeys: String, CodingKey {
            case name, conflictsResolvedByWrites, lostUpdates, lostUpdatesLaterInTrueTime, valueRemoveConflicts
        }

        /// Decodes the counts; ``valueRemoveConflicts`` is 0 in results written before it was counted.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            conflictsResolvedByWrites = try container.decode(Int.self, forKey: .conflictsResolvedByWrites)
            lostUpdates = try container.decode(Int.self, forKey: .lostUpdates)
            lostUpdatesLaterInTrueTime = try container.decode(Int.self, forKey: .lostUpdatesLaterInTrueTime)
            valueRemoveConflicts = try container.decodeIfPresent(Int.self, forKey: .valueRemoveConflicts) ?? 0
        }
    }

    /// The replicas' final states, over every device.
    public struct State: Codable, Hashable, Sendable {
        /// Keys, counted once per device that holds them.
        public var keys = 0
        /// Siblings per key.
        public var siblingsPerKey: Double?
        /// The most siblings of one key.
        public var maxSiblings = 0
        /// Bytes of an encoded state that are not keys or values, per key.
        public var metadataBytesPerKey: Double?
        /// Tombstones held.
        public var tombstones = 0
        /// Tombstones the hub collected.
        public var tombstonesCollectedByHub = 0

        private enum CodingKeys: String, CodingKey {
            case keys, siblingsPerKey, maxSiblings, metadataBytesPerKey, tombstones, tombstonesCollectedByHub
        }

        /// Encodes every member, `null` for an absent one.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(keys, forKey: .keys)
            try container.encode(siblingsPerKey, forKey: .siblingsPerKey)
            try container.encode(maxSiblings, forKey: .maxSiblings)
            try container.encode(metadataBytesPerKey, forKey: .metadataBytesPerKey)
            try container.encode(tombstones, forKey: .tombstones)
            try container.encode(tombstonesCollectedByHub, forKey: .tombstonesCollectedByHub)
        }
    }

    /// The quota's enforcement.
    public struct QuotaEnforcement: Codable, Hashable, Sendable {
        /// Compensating writes of the hub.
        public var compensations = 0
        /// Replies that told a device some of its writes were superseded.
        public var violationNotices = 0
    }

    /// The faults injected.
    public struct Faults: Codable, Hashable, Sendable {
        /// Symmetric partitions.
        public var partitions = 0
        /// One-way partitions.
        public var oneWayPartitions = 0
        /// Offline periods.
        public var offlinePeriods = 0
        /// Offline periods longer than the retirement interval.
        public var absencesPastRetirement = 0
        /// Hub outages.
        public var hubOutages = 0
        /// Hub crashes, each followed by a restart from the hub's durable state.
        public var hubCrashes = 0
        /// Hub restores from an older copy (a backup).
        public var hubRestores = 0
        /// Jumps of a device's clock, backwards or forwards.
        public var clockJumps = 0
        /// Periods a device's disk was full.
        public var diskFullPeriods = 0
        /// Store operations refused because the disk was full (writes, messages, switches).
        public var refusedOnFullDisk = 0
        /// Copies of messages and files damaged on the way (one bit flipped).
        public var damagedCopies = 0
        /// Damaged messages their receiver refused.
        public var damagedMessagesRefused = 0
        /// Times a reader skipped a file damaged on the way (folder topology).
        public var damagedFilesSkipped = 0
        /// Device crashes.
        public var crashes = 0
        /// Writes a crash lost before the disk made them durable (never acknowledged).
        public var writesLostInCrashes = 0
        /// Account switches.
        public var accountSwitches = 0
        /// Full-state replies of the hub (to devices back from retirement).
        public var fullStateReplies = 0
        /// Devices restarted from an older copy of their disk (a backup).
        public var deviceRestores = 0
        /// Writes lost with a device's disk in a restore: made after the backup, and known
        /// to no other replica and no message (never acknowledged; their dots are reused).
        public var writesLostInRestores = 0
        /// New incarnations devices started on finding their counters reused.
        public var deviceIncarnations = 0
        /// Writes a device adopted: an earlier writer ID's writes that no copy of its store
        /// held any more, re-stamped under the device's writer ID (`SyncAction.adopt` in Converge).
        public var adoptedWrites = 0
        /// Devices restarted from a copy of another device's disk, under its replica ID.
        public var deviceClones = 0
    }

    /// What the checkers looked at.
    public struct Checks: Codable, Hashable, Sendable {
        /// Events the loop ran.
        public var events = 0
        /// Samples of the CRDT-law checker.
        public var lawChecks = 0
        /// Durable writes the no-lost-write checker held the run to.
        public var writesChecked = 0
        /// Durable writes found lost.
        public var lostWrites = 0
    }
}
