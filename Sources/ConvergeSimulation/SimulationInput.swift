import Converge

/// Everything a run needs: the resolved options and the plan (operations and faults), and
/// where network decisions come from. A trace records all of it, so ``SimulationInput`` is
/// what `replay` and `shrink` rebuild.
public struct SimulationInput: Sendable {
    /// The seed the plan and the network's decisions are drawn from.
    public var seed: UInt64
    /// Every option of the run.
    public var options: SimulationOptions
    /// The operations and faults, in time order.
    package var plan: [TimedEvent]
    /// Recorded network decisions, or `nil` to draw them from the seed.
    package var recordedFates: [MessageID: NetworkFate]?
    /// A deliberately broken variant, to show a checker catching it.
    package var variant: BrokenVariant?
    /// For ``BrokenVariant/nondeterministic`` only: a source of ambient randomness the
    /// caller injects (the simulator itself never reads any).
    package var ambientJitter: (@Sendable () -> Int)?
    /// A merge policy of your own that every replica (each device and the hub) reads with,
    /// instead of the scenario's `policy`; the report's policy metrics carry its name.
    ///
    /// Every checker runs, except the reference model's check of reads, which knows the
    /// rules of the built-in policies only; that replicas hold every current write, and
    /// converge, is checked as for any policy. A trace does not record it: replay a
    /// custom policy's run from Swift, with the same input.
    public var customPolicy: MergePolicy?

    package init(seed: UInt64, options: SimulationOptions, plan: [TimedEvent], recordedFates: [MessageID: NetworkFate]? = nil,
                 variant: BrokenVariant? = nil) {
        self.seed = seed
        self.options = options
        self.plan = plan
        self.recordedFates = recordedFates
        self.variant = variant
    }

    /// The input of a fresh run: options resolved from the scenario and the seed, the
    /// plan drawn from the seed.
    ///
    /// - Throws: ``ScenarioError`` if the scenario's options contradict each other.
    public init(scenario: Scenario, seed: UInt64) throws(ScenarioError) {
        try self.init(scenario: scenario, seed: seed, variant: nil)
    }

    /// The input of a fresh run of a broken variant (or of the real system, for `nil`).
    package init(scenario: Scenario, seed: UInt64, variant: BrokenVariant?) throws(ScenarioError) {
        let options = try scenario.resolved(seed: seed)
        self.init(seed: seed, options: options, plan: PlanGenerator.plan(for: options, seed: seed), variant: variant)
    }
}
