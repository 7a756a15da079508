/// The outcome of one run.
public struct SimulationResult: Sendable {
    public var seed: UInt64
    public var options: SimulationOptions
    public var variant: BrokenVariant?
    public var converged: Bool
    /// Every checker failure, in the order found.
    public var violations: [String]
    public var metrics: JSON
    public var digest: String
    /// The network decisions the run used, by message (for the trace).
    public var fates: [Int: NetworkFate]

    public var passed: Bool { violations.isEmpty }
}
