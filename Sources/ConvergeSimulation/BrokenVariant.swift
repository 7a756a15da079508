/// Deliberately broken behaviours the simulator can run with, to show that each checker
/// catches what it exists to catch. Never use one outside a test of the checkers.
public enum BrokenVariant: String, CaseIterable, Hashable, Sendable {
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
