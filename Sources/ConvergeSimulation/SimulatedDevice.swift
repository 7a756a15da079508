@_spi(Testing) import Converge

/// One device of a run: a real ``ReplicatedKeyValueStore`` on a ``SimulatedDisk`` with a
/// clock the simulator sets. The store holds the device's sync state machines.
struct SimulatedDevice {
    let index: Int
    /// The device's name in reports and stories (`d0`, `d1`, …): which phone it is.
    let id: ReplicaID
    /// The replica ID its store opens with: ``id``, unless its disk was cloned from another
    /// device's (``PlannedEvent/deviceClone(from:to:downMs:)``), whose ID it then shares.
    var replicaID: ReplicaID
    let quota: Quota
    let policies: MergePolicies
    let disk = SimulatedDisk()
    let clock = ManualClock(startMilliseconds: 0)
    private(set) var store: ReplicatedKeyValueStore
    var clockOffsetMs = 0
    var clockDriftPpm = 0
    var crashed = false
    var flushScheduled = false
    /// Ledger indices of the writes the disk has not made durable yet.
    var unflushedWrites: [Int] = []
    /// The reference model's writes a new incarnation re-stamped whose dots also name
    /// another write (counters reused after a restore): forgotten once the incarnation is on
    /// disk, kept if a crash loses it first.
    var replacedOnFlush: [Int] = []
    /// Those of them forgotten since the disk's last backup: a restore brings them back.
    var replacedSinceBackup: [Int] = []
    var meshRound = 0
    /// How many times the store was opened on this device: with the index, its write
    /// session (a store draws one at random; a run's must be the same every time).
    private(set) var opens = 1
    /// Deliberately broken store behaviours of the run's variant, set again on every reopen.
    var removesAreNoOps = false
    var accountSwitchDropsOwnOnlyKeys = false
    var accountSwitchKeepsOldData = false
    var accountSwitchForgetsOldData = false
    var growsWhileOverQuota = false
    var joinKeepsOwnSiblings = false
    var ignoresReusedCounters = false
    var resolvesRelativeRepliesBlindly = false
    var meshIgnoresWriterSessions = false
    /// The union of the default account's contexts this device has held.
    var observed = VersionVector()

    /// The largest request the store sends the hub (`hubMessageBytes`).
    let hubRequestBytes: Int

    init(index: Int, quota: Quota, policies: MergePolicies, hubRequestBytes: Int = DeviceSyncMachine.defaultMaximumPushBytes) {
        self.index = index
        id = ReplicaID("d\(index)")!
        replicaID = id
        self.quota = quota
        self.policies = policies
        self.hubRequestBytes = hubRequestBytes
        // An empty disk cannot fail to load.
        store = try! ReplicatedKeyValueStore(replicaID: replicaID, storage: disk, quota: quota, policies: policies, clock: clock)
        store.maximumClockOffsetMilliseconds = Self.clockOffsetTolerance
        store.maximumHubRequestBytes = hubRequestBytes
        store.writeSession = writeSession
    }

    /// The write session of the store's current opening: unique to this device and opening.
    private var writeSession: UInt64 { UInt64(index + 1) << 32 | UInt64(opens) }

    /// The clock offset a simulated store or hub tolerates: none that a run's clocks reach.
    /// Runs set clocks wrong by up to weeks (`clockSkewMs`, `clockJumpMs`) to show that
    /// replicas converge whatever their clocks say; a store refusing such a peer would stop
    /// convergence by design, as `StoreTests` shows.
    static let clockOffsetTolerance: UInt64 = 1 << 50

    /// Sets the clock to this device's reading of `virtualMilliseconds` (virtual time since
    /// the start of the run, which began at `base`): with its offset and drift.
    func setClock(virtualMilliseconds now: Int, base: Int) {
        let drifted = now + Int((Double(now) * Double(clockDriftPpm) / 1_000_000).rounded())
        clock.set(milliseconds: UInt64(max(0, base + drifted + clockOffsetMs)))
    }

    /// Reopens the store from what the disk made durable; its sync machines start fresh
    /// (their state is volatile: the next exchange starts from nothing reported).
    mutating func reopen() throws(ConvergeError) {
        store = try ReplicatedKeyValueStore(replicaID: replicaID, storage: disk, quota: quota, policies: policies, clock: clock)
        opens += 1
        store.maximumClockOffsetMilliseconds = Self.clockOffsetTolerance
        store.maximumHubRequestBytes = hubRequestBytes
        store.writeSession = writeSession
        breakStore()
    }

    /// Switches on the variant's broken behaviours in the store (nothing for a real run).
    func breakStore() {
        if removesAreNoOps { store._removesAreNoOps = true }
        if accountSwitchDropsOwnOnlyKeys { store._accountSwitchDropsOwnOnlyKeys = true }
        if accountSwitchKeepsOldData { store._accountSwitchKeepsOldData = true }
        if accountSwitchForgetsOldData { store._accountSwitchForgetsOldData = true }
        if growsWhileOverQuota { store._growsWhileOverQuota = true }
        if joinKeepsOwnSiblings { store._joinKeepsOwnSiblings = true }
        if ignoresReusedCounters { store._ignoresReusedCounters = true }
        if meshIgnoresWriterSessions { store._meshIgnoresWriterSessions = true }
        if resolvesRelativeRepliesBlindly { store._resolvesRelativeRepliesBlindly = true }
    }
}
