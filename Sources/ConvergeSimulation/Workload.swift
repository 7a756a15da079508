/// One operation of a run's workload: what a device does, and when.
public struct WorkloadOperation: Hashable, Sendable {
    /// What the device does.
    public enum Kind: Hashable, Sendable {
        /// Writes key number `key` (of `keys` in the options) with a value of `valueBytes` bytes.
        case set(key: Int, valueBytes: Int)
        /// Removes key number `key`.
        case remove(key: Int)
        /// Reads key number `key` (the reference model checks what it shows).
        case read(key: Int)
        /// Calls `synchronize()` at once.
        case synchronize
    }

    /// When, in virtual milliseconds from the start.
    public var timeMs: Int
    /// Which device, from 0.
    public var device: Int
    /// What it does.
    public var kind: Kind

    /// An operation of `device` at `timeMs`.
    public init(timeMs: Int, device: Int, kind: Kind) {
        self.timeMs = timeMs
        self.device = device
        self.kind = kind
    }
}

/// A workload of your own: the operations of a run, in place of the ones a scenario draws
/// (its `setWeight`, `removeWeight`, … options). The faults, clocks and network decisions
/// stay those the seed draws (faults at the times drawn over the scenario's own
/// operations), so two workloads (or two policies) can be compared on the same hostile
/// histories.
///
/// ```swift
/// struct HotKeys: Workload {
///     func operations(options: SimulationOptions, random: inout some RandomNumberGenerator) -> [WorkloadOperation] {
///         (1...options.operations).map { index in
///             WorkloadOperation(timeMs: index * 20, device: Int.random(in: 0..<options.devices, using: &random),
///                               kind: .set(key: Int.random(in: 0..<2, using: &random), valueBytes: 16))
///         }
///     }
/// }
/// let input = try SimulationInput(scenario: scenario, seed: 7, workload: HotKeys())
/// ```
public protocol Workload: Sendable {
    /// The operations of a run with `options`, in any order (they are sorted by time,
    /// stably); `random` is seeded from the run's seed, so a run stays reproducible.
    func operations(options: SimulationOptions, random: inout some RandomNumberGenerator) -> [WorkloadOperation]
}

extension SimulationInput {
    /// The input of a run of `scenario` under `seed` whose operations come from
    /// `workload`; the faults, clock settings and network decisions are the seed's.
    ///
    /// - Throws: ``ScenarioError`` if the scenario's options contradict each other, or an
    ///   operation names a device or key the options do not have, a negative time or an
    ///   empty value.
    public init(scenario: Scenario, seed: UInt64, workload: some Workload) throws(ScenarioError) {
        try self.init(scenario: scenario, seed: seed)
        var random = Xoshiro256StarStar(seed: seed ^ 0x574F_524B_4C4F_4144)
        var operations: [TimedEvent] = []
        for (index, operation) in workload.operations(options: options, random: &random).enumerated() {
            guard operation.timeMs >= 0 else { throw ScenarioError("workload operation \(index): negative time \(operation.timeMs)") }
            guard (0..<options.devices).contains(operation.device) else {
                throw ScenarioError("workload operation \(index): device \(operation.device) of \(options.devices)")
            }
            let event: PlannedEvent
            switch operation.kind {
            case .set(let key, let bytes):
                guard (1...Self.largestWorkloadValue).contains(bytes) else {
                    throw ScenarioError("workload operation \(index): a value of \(bytes) bytes (1...\(Self.largestWorkloadValue))")
                }
                event = .set(device: operation.device, key: try Self.checked(key, index, options), valueBytes: bytes)
            case .remove(let key): event = .remove(device: operation.device, key: try Self.checked(key, index, options))
            case .read(let key): event = .read(device: operation.device, key: try Self.checked(key, index, options))
            case .synchronize: event = .synchronize(device: operation.device)
            }
            operations.append(TimedEvent(timeMs: operation.timeMs, event: event))
        }
        // The scenario's own operations give way; its faults keep the times the seed drew
        // (over the span of the scenario's operations).
        let faults = plan.filter { $0.event.isFault || Self.isClockSetting($0.event) }
        plan = (operations + faults).enumerated().sorted { ($0.element.timeMs, $0.offset) < ($1.element.timeMs, $1.offset) }.map(\.element)
    }

    /// The largest value a workload may write (a quota may still refuse it).
    static let largestWorkloadValue = 1 << 20

    private static func checked(_ key: Int, _ index: Int, _ options: SimulationOptions) throws(ScenarioError) -> Int {
        guard (0..<options.keys).contains(key) else { throw ScenarioError("workload operation \(index): key \(key) of \(options.keys)") }
        return key
    }

    private static func isClockSetting(_ event: PlannedEvent) -> Bool {
        if case .clock = event { return true }
        return false
    }
}
