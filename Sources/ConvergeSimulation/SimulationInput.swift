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
