import Converge

/// Deliberately broken behaviours the simulator can run with, to show that each checker
/// catches what it exists to catch. Never use one outside a test of the checkers.
package enum BrokenVariant: String, CaseIterable, Hashable, Sendable {
    /// Devices compute what they send for their own context instead of the one the peer
    /// (or hub) reported. Caught by the convergence checker.
    case guessingSender = "guessing-sender"
    /// The CRDT-law checker's join keeps the left state. Caught by the law checker.
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
    /// Whether the CRDT-law checker's join keeps its left state (``BrokenVariant/leftBiasedJoin``).
    private(set) var lawCheckerJoinKeepsLeft = false
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

    init(_ variant: BrokenVariant?, ambientJitter: (@Sendable () -> Int)?) {
        switch variant {
        case nil: break
        case .guessingSender: senderGuessesPeerContext = true
        case .leftBiasedJoin: lawCheckerJoinKeepsLeft = true
        case .readerDependentPolicy: oddDevicesReadWithAnotherPolicy = true
        case .forgetfulHub: hubForgetsCompensatingWrites = true
        case .earlyCollection: hubCollectsBeforeStable = true
        case .unenforcedQuota: hubEnforcesQuota = false
        case .sendsBeforeFlush: flushesBeforeSending = false
        case .nondeterministic: syncJitter = ambientJitter
        }
    }

    /// The quota the hub enforces.
    func hubQuota(_ configured: Quota) -> Quota { hubEnforcesQuota ? configured : .unlimited }

    /// The policy device `index` reads with.
    func readPolicy(ofDevice index: Int, configured: PolicyName) -> MergePolicy {
        guard oddDevicesReadWithAnotherPolicy && index % 2 == 1 else { return configured.policy }
        return configured == .multiValue ? .lastWriterWins : .multiValue
    }

    /// Milliseconds added to the next periodic sync: none, unless the variant reads
    /// ambient randomness.
    func syncJitterMs() -> Int { syncJitter?() ?? 0 }
}
