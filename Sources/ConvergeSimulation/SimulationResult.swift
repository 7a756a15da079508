/// The outcome of one run.
public struct SimulationResult: Sendable {
    /// The run's seed.
    public var seed: UInt64
    /// Every option of the run.
    public var options: SimulationOptions
    /// The broken variant the run used, if any.
    package var variant: BrokenVariant?
    /// Whether every replica converged within the bound after healing.
    public var converged: Bool
    /// Every checker failure, in the order found.
    public var violations: [Violation]
    /// What the run measured.
    public var metrics: SimulationMetrics
    /// A digest of everything the run observed (final states, metrics, violations): two
    /// runs of the same input give the same digest, in any process.
    public var digest: String
    /// The network decisions the run used, by message (for the trace).
    package var fates: [MessageID: NetworkFate]
    /// What happened when, if the run recorded it (``Simulation/recordTimeline()``).
    package var timeline: SimulationTimeline? = nil

    /// Whether no checker failed.
    public var passed: Bool { violations.isEmpty }
}
