@_spi(Testing) import Converge

/// Deliberately broken behaviours the simulator can run with, to show that each checker
/// catches what it exists to catch. Never use one outside a test of the checkers.
package enum BrokenVariant: String, CaseIterable, Hashable, Sendable {
    /// Devices compute what they send for their own context instead of the one the peer
    /// (or hub) reported. Caught by the convergence checker.
    case guessingSender = "guessing-sender"
    /// The stores' join keeps their own siblings of every key they hold (taking only new
    /// keys and the other side's context). Caught by the CRDT-law checker, which tests the
    /// stores' own join.
    case leftBiasedJoin = "left-biased-join"
    /// Odd-numbered devices read with another policy. Caught by the convergence checker
    /// (identical visible values).
    case readerDependentPolicy = "reader-dependent-policy"
    /// The hub drops quota-breaking writes instead of superseding them with a
    /// compensating write. Caught by the no-lost-write checker.
    case forgetfulHub = "forgetful-hub"
    /// The hub collects tombstones below its own context, before they are stable.
    /// Caught by the convergence checker.
    case earlyCollection = "early-collection"
    /// The hub enforces no quota. Caught by the quota checker.
    case unenforcedQuota = "unenforced-quota"
    /// Devices send state their disk has not made durable, so a crash makes them reuse
    /// dots already sent. Caught by the convergence and no-lost-write checkers.
    case sendsBeforeFlush = "sends-before-flush"
    /// Sync timing depends on a source of ambient randomness the caller injects as
    /// ``SimulationInput/ambientJitter``. Caught by the determinism checker.
    case nondeterministic = "nondeterministic"
    /// The hub supersedes every write to a key ending in "3" with a compensating write, as
    /// if it broke the quota, and reports it as a compensation. Caught by the compensation
    /// checker (the reference model says the quota would have held).
    case revertingHub = "reverting-hub"
    /// Last-writer-wins keeps the oldest write. Caught by the reference model (reads).
    case oldestWins = "oldest-wins"
    /// Every removal is accepted and does nothing. Caught by the reference model (a local
    /// removal is not visible at once).
    case noOpRemoves = "no-op-removes"
    /// Switching back to an account drops the keys only this device wrote. Caught by the
    /// no-lost-write checker (the reference model knows the device wrote them).
    case switchDropsOwnKeys = "switch-drops-own-keys"
    /// In the folder topology, readers take a replica's files past one that has not
    /// arrived, applying deltas out of causal order. Caught by the no-lost-write checker (a
    /// reader's context claims writes it never received).
    case readsPastGaps = "reads-past-gaps"
    /// The hub restarts from nothing after a crash, as if its durable state were lost.
    /// Caught by the no-lost-write checker (devices trusted it with writes it forgot).
    case amnesiacHub = "amnesiac-hub"
    /// The hub ignores devices' repairs after it was restored from an older copy (and sends
    /// no full state to a device that knows more than it was sent): values removed since the
    /// backup come back. Caught by the reference model (a replica holds a write that one it
    /// knows superseded) or the convergence checker.
    case unrepairedHub = "unrepaired-hub"
    /// A full disk drops the keys of what it saves and reports success, so the store
    /// acknowledges writes that a crash then loses (the disk keeps the counters, so the
    /// device does not fetch them again). Caught by the no-lost-write checker.
    case silentFullDisk = "silent-full-disk"
    /// Switching account keeps the old account's data, merged into the new one's. Caught by
    /// the account checker.
    case leakyAccountSwitch = "leaky-account-switch"
    /// Switching away from an account keeps nothing of it aside (the device would download
    /// it again on its return), so what the hub lost of it in a restore, and what the device
    /// had not pushed, is gone for good. Caught by the reference model, the no-lost-write
    /// and liveness checkers, mostly in the default account; in an account no device is on
    /// at the end, by the reference model (the hub's copy joined with what devices keep
    /// aside; `SimulationRegressionTests`).
    case forgetfulAccountSwitch = "forgetful-account-switch"
    /// A store over the soft quota (mesh, folder) accepts writes that grow usage. Caught by
    /// the quota checker.
    case growsOverSoftQuota = "grows-over-soft-quota"
    /// Messages and files damaged on the way arrive with a checksum that matches them, as
    /// over a format without integrity checks. Caught by the integrity checker (a damaged
    /// message was taken as valid), and in the folder topology by the no-lost-write and
    /// convergence checkers.
    case uncheckedDamage = "unchecked-damage"
    /// In the folder topology, readers take a snapshot written in parts before every part
    /// has arrived, as if the missing keys had been removed. Caught by the no-lost-write
    /// checker.
    case takesIncompleteSnapshots = "takes-incomplete-snapshots"
    /// The hub sends a page of a delta under its whole context, claiming the writes the
    /// page leaves out. Caught by the no-lost-write checker (a device's context claims
    /// writes it never received).
    case pagesClaimWholeContext = "pages-claim-whole-context"
    /// A store restored from an older copy of its disk never finds its counters reused: it
    /// keeps writing under dots peers already hold for other writes, and takes their
    /// answers as if it held all they know of it. Caught by the no-lost-write checker (the
    /// writes the restored device made again, and those it never got back).
    case unnoticedRestore = "unnoticed-restore"
    /// The hub never compares write sessions (``WriterSessions``): a restored or cloned
    /// device that issued as many counters as the original goes unseen, and its writes are
    /// taken for the ones the hub holds under the same dots. Caught by the no-lost-write
    /// checker.
    case sessionBlindHub = "session-blind-hub"
    /// Mesh devices never compare write sessions (they neither refuse a peer's gossip whose
    /// sessions contradict its earlier gossip nor name or check tips): a restored or cloned
    /// device that issued as many counters as the original goes unseen, and peers take its
    /// writes for the ones they hold under the same dots. Caught by the no-lost-write
    /// checker.
    case sessionBlindMesh = "session-blind-mesh"
    /// Devices join a hub's reply written relative to what they held when they polled or
    /// pushed (``SyncReply/relativeTo``) with whatever they hold when it arrives: a late reply then
    /// claims, for its keys, writes it does not carry, and the device drops them (or keeps a
    /// write they replaced). Caught by the reference model and the no-lost-write checker.
    case blindRelativeReplies = "blind-relative-replies"

    /// Why the variant changes nothing in a run with `options`, or `nil` if it does change
    /// something there: a variant that cannot fire proves nothing, so the runner says so.
    package func inertReason(in options: SimulationOptions) -> String? {
        switch self {
        case .guessingSender, .leftBiasedJoin, .nondeterministic:
            return nil
        case .sendsBeforeFlush:
            return options.crashes == 0 ? "no device crashes (crashes = 0)" : nil
        case .readerDependentPolicy:
            return options.devices < 2 ? "there is no odd-numbered device" : nil
        case .forgetfulHub, .unenforcedQuota, .revertingHub, .earlyCollection:
            if options.topology != .hub { return "there is no hub in the \(options.topology.rawValue) topology" }
            if self == .revertingHub && options.keys < 4 { return "no key ends in \"3\" (keys = \(options.keys))" }
            if self == .earlyCollection && options.removeWeight == 0 { return "nothing is removed (removeWeight = 0)" }
            return nil
        case .oldestWins:
            return options.policy == .lww ? nil : "the policy is \(options.policy.rawValue), not lww"
        case .noOpRemoves:
            return options.removeWeight == 0 ? "nothing is removed (removeWeight = 0)" : nil
        case .switchDropsOwnKeys:
            return options.accountSwitches == 0 ? "no device switches account (accountSwitches = 0)" : nil
        case .readsPastGaps:
            return options.topology == .folder ? nil : "no device reads files in the \(options.topology.rawValue) topology"
        case .leakyAccountSwitch:
            return options.accountSwitches == 0 ? "no device switches account (accountSwitches = 0)" : nil
        case .forgetfulAccountSwitch:
            return options.accountSwitches == 0 ? "no device switches account (accountSwitches = 0)" : nil
        case .growsOverSoftQuota:
            return options.topology == .hub ? "the quota is not soft in the hub topology (the hub compensates)" : nil
        case .silentFullDisk:
            if options.diskFullPeriods == 0 { return "no disk is ever full (diskFullPeriods = 0)" }
            return options.crashes == 0 ? "no device crashes, so nothing dropped is ever missed (crashes = 0)" : nil
        case .uncheckedDamage:
            return options.corruptMessages == 0 ? "nothing is damaged on the way (corruptMessages = 0)" : nil
        case .takesIncompleteSnapshots:
            if options.topology != .folder { return "no device reads files in the \(options.topology.rawValue) topology" }
            return options.folderFileBytes >= 1 << 20 ? "no snapshot is written in parts (folderFileBytes = \(options.folderFileBytes))" : nil
        case .pagesClaimWholeContext:
            if options.topology != .hub { return "there is no hub in the \(options.topology.rawValue) topology" }
            return options.hubMessageBytes >= 1 << 20 ? "no reply is sent in pages (hubMessageBytes = \(options.hubMessageBytes))" : nil
        case .amnesiacHub:
            if options.topology != .hub { return "there is no hub in the \(options.topology.rawValue) topology" }
            return options.hubCrashes == 0 ? "the hub never crashes (hubCrashes = 0)" : nil
        case .unrepairedHub:
            if options.topology != .hub { return "there is no hub in the \(options.topology.rawValue) topology" }
            return options.hubRestores == 0 ? "the hub is never restored from an older copy (hubRestores = 0)" : nil
        case .unnoticedRestore:
            return options.deviceRestores == 0 ? "no device is restored from an older copy (deviceRestores = 0)" : nil
        case .sessionBlindHub:
            if options.topology != .hub { return "there is no hub in the \(options.topology.rawValue) topology" }
            return options.deviceRestores == 0 && options.deviceClones == 0
                ? "no device is restored or cloned (deviceRestores = 0, deviceClones = 0)" : nil
        case .blindRelativeReplies:
            return options.topology == .hub ? nil : "there is no hub in the \(options.topology.rawValue) topology"
        case .sessionBlindMesh:
            if options.topology != .mesh { return "devices gossip directly only in the mesh topology" }
            return options.deviceRestores == 0 && options.deviceClones == 0
                ? "no device is restored or cloned (deviceRestores = 0, deviceClones = 0)" : nil
        }
    }
}

/// The hooks through which a broken variant changes a run, in one place: each variant sets
/// exactly the hooks listed under it, and the simulator consults these hooks and never the
/// variant itself. A run without a variant has every hook at its real behaviour.
struct VariantHooks {
    /// Whether a device flushes its disk before it sends its state (off:
    /// ``BrokenVariant/sendsBeforeFlush``).
    private(set) var flushesBeforeSending = true
    /// Whether devices send a delta for their own context instead of the one the hub or
    /// peer reported (``BrokenVariant/guessingSender``).
    private(set) var senderGuessesPeerContext = false
    /// Whether the stores' join keeps their own siblings (``BrokenVariant/leftBiasedJoin``).
    private(set) var storesJoinKeepingOwnSiblings = false
    /// Whether odd-numbered devices read with another policy (``BrokenVariant/readerDependentPolicy``).
    private(set) var oddDevicesReadWithAnotherPolicy = false
    /// Whether the hub drops quota-breaking writes without a compensating write
    /// (``BrokenVariant/forgetfulHub``).
    private(set) var hubForgetsCompensatingWrites = false
    /// Whether the hub collects tombstones before they are stable (``BrokenVariant/earlyCollection``).
    private(set) var hubCollectsBeforeStable = false
    /// Whether the hub enforces the quota (off: ``BrokenVariant/unenforcedQuota``).
    private(set) var hubEnforcesQuota = true
    /// Ambient randomness added to sync timing (``BrokenVariant/nondeterministic``).
    private(set) var syncJitter: (@Sendable () -> Int)?
    /// Whether the hub reverts writes to keys ending in "3" (``BrokenVariant/revertingHub``).
    private(set) var hubRevertsKeysEndingIn3 = false
    /// Whether last-writer-wins keeps the oldest write (``BrokenVariant/oldestWins``).
    private(set) var lastWriterWinsKeepsOldest = false
    /// Whether the stores' removals do nothing (``BrokenVariant/noOpRemoves``).
    private(set) var removesAreNoOps = false
    /// Whether switching account drops keys only this device wrote (``BrokenVariant/switchDropsOwnKeys``).
    private(set) var accountSwitchDropsOwnOnlyKeys = false
    /// Whether folder readers take files past a gap (``BrokenVariant/readsPastGaps``).
    private(set) var folderReadersReadPastGaps = false
    /// Whether the hub restarts from nothing after a crash (``BrokenVariant/amnesiacHub``).
    private(set) var hubRestartsEmpty = false
    /// Whether a full disk drops saves silently (``BrokenVariant/silentFullDisk``).
    private(set) var diskDropsSavesWhenFull = false
    /// Whether switching account keeps the old account's data (``BrokenVariant/leakyAccountSwitch``).
    private(set) var accountSwitchKeepsOldData = false
    /// Whether switching account keeps nothing aside (``BrokenVariant/forgetfulAccountSwitch``).
    private(set) var accountSwitchForgetsOldData = false
    /// Whether a store over the soft quota accepts growth (``BrokenVariant/growsOverSoftQuota``).
    private(set) var storesGrowWhileOverQuota = false
    /// Whether damaged messages and files arrive with a checksum that matches them
    /// (``BrokenVariant/uncheckedDamage``).
    private(set) var linkResealsDamage = false
    /// Whether folder readers take snapshots before every part arrived
    /// (``BrokenVariant/takesIncompleteSnapshots``).
    private(set) var folderReadersTakeIncompleteSnapshots = false
    /// Whether the hub's pages claim its whole context (``BrokenVariant/pagesClaimWholeContext``).
    private(set) var hubPagesClaimWholeContext = false
    /// Whether the hub ignores repairs (``BrokenVariant/unrepairedHub``).
    private(set) var hubSkipsRepair = false
    /// Whether stores never find their counters reused (``BrokenVariant/unnoticedRestore``).
    private(set) var storesIgnoreReusedCounters = false
    /// Whether the hub never compares write sessions (``BrokenVariant/sessionBlindHub``).
    private(set) var hubIgnoresWriterSessions = false
    /// Whether mesh devices never compare write sessions (``BrokenVariant/sessionBlindMesh``).
    private(set) var meshIgnoresWriterSessions = false
    /// Whether stores join relative replies with whatever they hold (``BrokenVariant/blindRelativeReplies``).
    private(set) var storesResolveRelativeRepliesBlindly = false

    init(_ variant: BrokenVariant?, ambientJitter: (@Sendable () -> Int)?) {
        switch variant {
        case nil: break
        case .guessingSender: senderGuessesPeerContext = true
        case .leftBiasedJoin: storesJoinKeepingOwnSiblings = true
        case .readerDependentPolicy: oddDevicesReadWithAnotherPolicy = true
        case .forgetfulHub: hubForgetsCompensatingWrites = true
        case .earlyCollection: hubCollectsBeforeStable = true
        case .unenforcedQuota: hubEnforcesQuota = false
        case .sendsBeforeFlush: flushesBeforeSending = false
        case .nondeterministic: syncJitter = ambientJitter
        case .revertingHub: hubRevertsKeysEndingIn3 = true
        case .oldestWins: lastWriterWinsKeepsOldest = true
        case .noOpRemoves: removesAreNoOps = true
        case .switchDropsOwnKeys: accountSwitchDropsOwnOnlyKeys = true
        case .readsPastGaps: folderReadersReadPastGaps = true
        case .amnesiacHub: hubRestartsEmpty = true
        case .silentFullDisk: diskDropsSavesWhenFull = true
        case .leakyAccountSwitch: accountSwitchKeepsOldData = true
        case .forgetfulAccountSwitch: accountSwitchForgetsOldData = true
        case .growsOverSoftQuota: storesGrowWhileOverQuota = true
        case .uncheckedDamage: linkResealsDamage = true
        case .takesIncompleteSnapshots: folderReadersTakeIncompleteSnapshots = true
        case .pagesClaimWholeContext: hubPagesClaimWholeContext = true
        case .unrepairedHub: hubSkipsRepair = true
        case .unnoticedRestore: storesIgnoreReusedCounters = true
        case .sessionBlindHub: hubIgnoresWriterSessions = true
        case .sessionBlindMesh: meshIgnoresWriterSessions = true
        case .blindRelativeReplies: storesResolveRelativeRepliesBlindly = true
        }
    }

    /// The quota the hub enforces.
    func hubQuota(_ configured: Quota) -> Quota { hubEnforcesQuota ? configured : .unlimited }

    /// The policy device `index` reads with.
    func readPolicy(ofDevice index: Int, configured: PolicyName) -> MergePolicy {
        if lastWriterWinsKeepsOldest && configured == .lww { return Self.oldestWins }
        guard oddDevicesReadWithAnotherPolicy && index % 2 == 1 else { return configured.policy }
        return configured == .multiValue ? .lastWriterWins : .multiValue
    }

    /// Last-writer-wins upside down: the sibling with the least timestamp wins.
    static let oldestWins = MergePolicy.custom("lww") { siblings in
        siblings.min { lhs, rhs in lhs.timestamp != rhs.timestamp ? lhs.timestamp < rhs.timestamp : lhs.dot < rhs.dot }?.value
    }

    /// Milliseconds added to the next periodic sync: none, unless the variant reads
    /// ambient randomness.
    func syncJitterMs() -> Int { syncJitter?() ?? 0 }
}
