/// The value of one option as a scenario file, a trace or the command line gives it.
package enum OptionValue: Hashable, Sendable, CustomStringConvertible {
    case integer(Int)
    case number(Double)
    case choice(String)

    /// As JSON writes it (a choice quoted), for messages and option listings.
    package var description: String {
        switch self {
        case .integer(let value): return String(value)
        case .number(let value): return JSONCoding.text(of: value)
        case .choice(let value): return "\"\(value)\""
        }
    }
}

/// One option of a simulation: its name (as in scenario files), the values it takes, what
/// a run uses when the scenario leaves it open, its help, and the property of
/// ``SimulationOptions`` it sets.
package struct OptionSpec: Sendable {
    /// The values an option takes.
    package enum Kind: Sendable {
        case integer(ClosedRange<Int>)
        case probability
        case number(ClosedRange<Double>)
        case choice([String])
    }

    /// What a run uses for an option the scenario does not set.
    package enum Default: Sendable {
        /// A fixed value.
        case fixed(OptionValue)
        /// Drawn from the seed ("swarm testing") in a range or among choices, and printed
        /// as derived.
        case swarmInteger(ClosedRange<Int>)
        case swarmNumber(ClosedRange<Double>)
        case swarmChoice([String])
    }

    package let name: String
    package let kind: Kind
    package let defaultValue: Default
    package let summary: String
    /// The property of ``SimulationOptions`` the option sets.
    let keyPath: AnyKeyPath & Sendable
    private let read: @Sendable (SimulationOptions) -> OptionValue
    /// Sets a value ``validated(_:)`` has accepted.
    private let write: @Sendable (inout SimulationOptions, OptionValue) -> Void

    /// The option's value in `options`.
    package func value(in options: SimulationOptions) -> OptionValue { read(options) }

    /// Sets the option in `options` to `value`, checked first.
    func set(_ value: OptionValue, in options: inout SimulationOptions) throws(ScenarioError) {
        write(&options, try validated(value))
    }

    /// What the option takes, in words: "an integer in 1...64", "one of hub, mesh".
    package var expectation: String {
        switch kind {
        case .integer(let range): return "an integer in \(range.lowerBound)...\(range.upperBound)"
        case .probability: return "a probability in 0...1"
        case .number(let range):
            return "a number in \(JSONCoding.text(of: range.lowerBound))...\(JSONCoding.text(of: range.upperBound))"
        case .choice(let choices): return "one of \(choices.joined(separator: ", "))"
        }
    }

    /// What a run uses when the scenario leaves the option open, in words.
    package var defaultDescription: String {
        switch defaultValue {
        case .fixed(let value): return "default \(value)"
        case .swarmInteger(let range): return "from the seed in \(range.lowerBound)...\(range.upperBound)"
        case .swarmNumber(let range):
            return "from the seed in \(JSONCoding.text(of: range.lowerBound))...\(JSONCoding.text(of: range.upperBound))"
        case .swarmChoice(let choices): return "from the seed among \(choices.joined(separator: ", "))"
        }
    }

    /// `value` if the option takes it (an integral number for an integer option, an integer
    /// for a number), else an error naming the option, what it takes and what it got.
    package func validated(_ value: OptionValue) throws(ScenarioError) -> OptionValue {
        let problem = ScenarioError("option \"\(name)\" must be \(expectation), not \(value)")
        switch (kind, value) {
        case (.integer(let range), .integer(let integer)):
            guard range.contains(integer) else { throw problem }
            return value
        case (.integer(let range), .number(let number)):
            guard number.rounded() == number, let integer = Int(exactly: number), range.contains(integer) else { throw problem }
            return .integer(integer)
        case (.probability, .integer(let integer)):
            return try validated(.number(Double(integer)))
        case (.probability, .number(let number)):
            guard number >= 0 && number <= 1 else { throw problem }
            return value
        case (.number, .integer(let integer)):
            return try validated(.number(Double(integer)))
        case (.number(let range), .number(let number)):
            guard range.contains(number) else { throw problem }
            return value
        case (.choice(let choices), .choice(let choice)):
            guard choices.contains(choice) else { throw problem }
            return value
        default:
            throw problem
        }
    }

    /// The value of command-line text: a number if it reads as one, else a choice.
    package func value(parsing text: String) throws(ScenarioError) -> OptionValue {
        let value: OptionValue = Int(text).map(OptionValue.integer) ?? Double(text).map(OptionValue.number) ?? .choice(text)
        return try validated(value)
    }

    // MARK: Building the table

    static func integer(_ name: String, _ keyPath: WritableKeyPath<SimulationOptions, Int> & Sendable, in range: ClosedRange<Int>,
                        default value: Int, _ summary: String) -> OptionSpec {
        integer(name, keyPath, in: range, defaultValue: .fixed(.integer(value)), summary)
    }

    static func integer(_ name: String, _ keyPath: WritableKeyPath<SimulationOptions, Int> & Sendable, in range: ClosedRange<Int>,
                        swarm: ClosedRange<Int>, _ summary: String) -> OptionSpec {
        integer(name, keyPath, in: range, defaultValue: .swarmInteger(swarm), summary)
    }

    private static func integer(_ name: String, _ keyPath: WritableKeyPath<SimulationOptions, Int> & Sendable,
                                in range: ClosedRange<Int>, defaultValue: Default, _ summary: String) -> OptionSpec {
        OptionSpec(name: name, kind: .integer(range), defaultValue: defaultValue, summary: summary, keyPath: keyPath,
                   read: { .integer($0[keyPath: keyPath]) },
                   write: { options, value in
                       guard case .integer(let integer) = value else { preconditionFailure("\(name) takes an integer") }
                       options[keyPath: keyPath] = integer
                   })
    }

    static func probability(_ name: String, _ keyPath: WritableKeyPath<SimulationOptions, Double> & Sendable,
                            swarm: ClosedRange<Double>, _ summary: String) -> OptionSpec {
        number(name, keyPath, kind: .probability, defaultValue: .swarmNumber(swarm), summary)
    }

    static func probability(_ name: String, _ keyPath: WritableKeyPath<SimulationOptions, Double> & Sendable,
                            default value: Double, _ summary: String) -> OptionSpec {
        number(name, keyPath, kind: .probability, defaultValue: .fixed(.number(value)), summary)
    }

    static func number(_ name: String, _ keyPath: WritableKeyPath<SimulationOptions, Double> & Sendable, in range: ClosedRange<Double>,
                       swarm: ClosedRange<Double>, _ summary: String) -> OptionSpec {
        number(name, keyPath, kind: .number(range), defaultValue: .swarmNumber(swarm), summary)
    }

    private static func number(_ name: String, _ keyPath: WritableKeyPath<SimulationOptions, Double> & Sendable, kind: Kind,
                               defaultValue: Default, _ summary: String) -> OptionSpec {
        OptionSpec(name: name, kind: kind, defaultValue: defaultValue, summary: summary, keyPath: keyPath,
                   read: { .number($0[keyPath: keyPath]) },
                   write: { options, value in
                       guard case .number(let number) = value else { preconditionFailure("\(name) takes a number") }
                       options[keyPath: keyPath] = number
                   })
    }

    static func choice<Choice: RawRepresentable & CaseIterable & Sendable>(
        _ name: String, _ keyPath: WritableKeyPath<SimulationOptions, Choice> & Sendable, default value: Choice, _ summary: String
    ) -> OptionSpec where Choice.RawValue == String {
        choice(name, keyPath, defaultValue: .fixed(.choice(value.rawValue)), summary)
    }

    static func choice<Choice: RawRepresentable & CaseIterable & Sendable>(
        _ name: String, _ keyPath: WritableKeyPath<SimulationOptions, Choice> & Sendable, swarm choices: [Choice], _ summary: String
    ) -> OptionSpec where Choice.RawValue == String {
        choice(name, keyPath, defaultValue: .swarmChoice(choices.map(\.rawValue)), summary)
    }

    private static func choice<Choice: RawRepresentable & CaseIterable & Sendable>(
        _ name: String, _ keyPath: WritableKeyPath<SimulationOptions, Choice> & Sendable, defaultValue: Default, _ summary: String
    ) -> OptionSpec where Choice.RawValue == String {
        OptionSpec(name: name, kind: .choice(Choice.allCases.map(\.rawValue)), defaultValue: defaultValue, summary: summary,
                   keyPath: keyPath, read: { .choice($0[keyPath: keyPath].rawValue) },
                   write: { options, value in
                       guard case .choice(let text) = value, let choice = Choice(rawValue: text) else {
                           preconditionFailure("\(name) takes one of its choices")
                       }
                       options[keyPath: keyPath] = choice
                   })
    }
}

/// Every option a scenario can set, in the order reports print them: the one source of
/// their names, ranges, defaults and help. Scenario files, traces, the command line's
/// overrides and `converge-sim options` all go through it.
package enum SimulationOptionTable {
    package static let specs: [OptionSpec] = [
        .integer("devices", \.devices, in: 1...64, swarm: 2...8, "number of devices"),
        .choice("topology", \.topology, default: .hub, "hub, mesh, or folder (a shared folder carried by a file-sync service)"),
        .choice("policy", \.policy, default: .lww, "merge policy of every key"),
        .integer("operations", \.operations, in: 0...10_000_000, default: 2_000, "workload operations in the safety phase"),
        .integer("operationIntervalMs", \.operationIntervalMs, in: 1...600_000, swarm: 5...40, "mean virtual time between operations"),
        .integer("setWeight", \.setWeight, in: 0...1_000, swarm: 30...60, "relative frequency of set"),
        .integer("removeWeight", \.removeWeight, in: 0...1_000, swarm: 0...20, "relative frequency of remove"),
        .integer("syncWeight", \.syncWeight, in: 0...1_000, swarm: 5...20, "relative frequency of an explicit synchronize"),
        .integer("readWeight", \.readWeight, in: 0...1_000, swarm: 5...30, "relative frequency of read"),
        .integer("keys", \.keys, in: 1...1_000_000, swarm: 4...64, "distinct keys the workload uses"),
        .choice("keyDistribution", \.keyDistribution, swarm: KeyDistribution.allCases, "key popularity"),
        .number("zipfExponent", \.zipfExponent, in: 0...5, swarm: 0.8...1.4, "exponent of the Zipf popularity"),
        .integer("minValueBytes", \.minValueBytes, in: 0...1_048_576, swarm: 1...16, "smallest value written"),
        .integer("maxValueBytes", \.maxValueBytes, in: 0...1_048_576, swarm: 16...128, "largest value written"),
        .choice("latency", \.latency, swarm: LatencyDistribution.allCases, "latency distribution"),
        .integer("minLatencyMs", \.minLatencyMs, in: 0...600_000, swarm: 1...20, "smallest latency"),
        .integer("maxLatencyMs", \.maxLatencyMs, in: 0...600_000, swarm: 20...200,
                 "largest latency (uniform) or minimum plus the mean (exponential)"),
        .probability("loss", \.loss, swarm: 0...0.2, "probability a message is lost"),
        .probability("duplicate", \.duplicate, swarm: 0...0.1, "probability a message is delivered twice"),
        .probability("reorder", \.reorder, swarm: 0...0.2, "probability a message is held back (up to 10x the latency)"),
        .integer("queueCapacity", \.queueCapacity, in: 1...1_000_000, swarm: 16...256, "messages in flight to one node; more are dropped"),
        .integer("partitions", \.partitions, in: 0...10_000, swarm: 0...3, "symmetric partitions (a group cut off from the rest)"),
        .integer("oneWayPartitions", \.oneWayPartitions, in: 0...10_000, swarm: 0...2, "one-way partitions (a group's messages out are lost)"),
        .integer("partitionMs", \.partitionMs, in: 1...100_000_000, swarm: 500...5_000, "length of a partition"),
        .integer("offlinePeriods", \.offlinePeriods, in: 0...10_000, swarm: 0...3, "periods a device is offline"),
        .integer("offlineMs", \.offlineMs, in: 1...100_000_000, swarm: 500...5_000, "length of an offline period"),
        .integer("hubOutages", \.hubOutages, in: 0...10_000, swarm: 0...2, "periods the hub is down"),
        .integer("hubOutageMs", \.hubOutageMs, in: 1...100_000_000, swarm: 200...3_000, "length of a hub outage"),
        .integer("crashes", \.crashes, in: 0...10_000, swarm: 0...3, "device crashes (volatile state lost)"),
        .integer("restartMs", \.restartMs, in: 1...100_000_000, swarm: 10...1_000, "time a crashed device stays down"),
        .integer("flushIntervalMs", \.flushIntervalMs, in: 1...100_000_000, swarm: 10...500, "how often a device's disk makes writes durable"),
        .integer("clockSkewMs", \.clockSkewMs, in: 0...604_800_000, swarm: 0...500, "largest clock offset of a device, either way"),
        .integer("clockDriftPpm", \.clockDriftPpm, in: 0...100_000, swarm: 0...200, "largest clock drift, in parts per million"),
        .integer("aheadDevices", \.aheadDevices, in: 0...64, default: 0, "devices whose clock runs aheadMs ahead"),
        .integer("aheadMs", \.aheadMs, in: 0...604_800_000, default: 3_600_000, "how far ahead those clocks run"),
        .integer("accountSwitches", \.accountSwitches, in: 0...10_000, swarm: 0...2, "devices switching to the second account and back"),
        .integer("retirementMs", \.retirementMs, in: 1...100_000_000_000, swarm: 5_000...20_000, "silence after which the hub retires a device"),
        .integer("returns", \.returns, in: 0...10_000, swarm: 0...1, "devices silent past retirement that come back"),
        .integer("quotaKeys", \.quotaKeys, in: 1...10_000_000, default: 1_024, "quota: most keys"),
        .integer("quotaTotalBytes", \.quotaTotalBytes, in: 1...1_000_000_000, default: 1_048_576, "quota: most bytes of values in total"),
        .integer("quotaValueBytes", \.quotaValueBytes, in: 1...1_000_000_000, default: 1_048_576, "quota: most bytes of one value"),
        .integer("quotaKeyBytes", \.quotaKeyBytes, in: 1...1_000, default: 64, "quota: most bytes of a key"),
        .integer("syncIntervalMs", \.syncIntervalMs, in: 1...100_000_000, swarm: 50...1_000, "how often each device synchronizes by itself"),
        .integer("livenessBoundMs", \.livenessBoundMs, in: 1...100_000_000, default: 120_000,
                 "time after healing within which replicas must converge"),
        .integer("quietTailMs", \.quietTailMs, in: 0...100_000_000, default: 0,
                 "after the last operation, how long faults and loss go on with only syncs, before the heal"),
        .probability("healedLoss", \.healedLoss, default: 0, "probability a message is still lost after the heal (a partial heal)"),
        // Options added later go here, at the end: resolving a scenario draws once per option in
        // table order, so an option inserted earlier would change every later option's draw
        // for a given seed (and every recorded seed's run).
        .integer("hubCrashes", \.hubCrashes, in: 0...10_000, default: 0,
                 "hub crashes: down for hubOutageMs, then restarted from its durable state (hub topology)"),
        .integer("diskFullPeriods", \.diskFullPeriods, in: 0...10_000, default: 0, "periods a device's disk is full (every save fails)"),
        .integer("diskFullMs", \.diskFullMs, in: 1...100_000_000, default: 2_000, "length of a disk-full period"),
        .integer("clockJumps", \.clockJumps, in: 0...10_000, default: 0, "times a device's clock jumps backwards or forwards"),
        .integer("clockJumpMs", \.clockJumpMs, in: 1...604_800_000, default: 600_000, "largest clock jump, either way"),
        .probability("corruptMessages", \.corruptMessages, default: 0,
                     "probability a delivered copy of a message or file has one bit flipped (before the heal)"),
        .integer("folderFileBytes", \.folderFileBytes, in: 256...16_777_216, default: 16_777_216,
                 "largest shared-folder file a device writes; larger snapshots are written in parts (folder topology)"),
        .integer("hubMessageBytes", \.hubMessageBytes, in: 256...16_777_216, default: 16_777_216,
                 "largest request a device sends the hub and reply the hub makes; larger ones travel in pages (hub topology)"),
        .integer("hubRestores", \.hubRestores, in: 0...10_000, default: 0,
                 "hub restores: a backup is taken, later the hub loses its state and restarts from that older copy (hub topology)"),
        .integer("deviceRestores", \.deviceRestores, in: 0...10_000, default: 0,
                 "device restores: a device's disk is backed up, later the device restarts (after restartMs) from that older copy"),
        .integer("deviceClones", \.deviceClones, in: 0...10_000, default: 0,
                 "device clones: a device restarts (after restartMs) from a copy of another device's disk, under its replica ID"),
    ]

    /// The option called `name`, or `nil`.
    package static func spec(named name: String) -> OptionSpec? { specs.first { $0.name == name } }

    /// The option that sets `keyPath`, or `nil`.
    static func spec(for keyPath: AnyKeyPath) -> OptionSpec? { specs.first { $0.keyPath == keyPath } }

    /// An error for an option name the table does not know.
    static func unknown(_ name: String) -> ScenarioError {
        ScenarioError("unknown option \"\(name)\"; known options: \(specs.map(\.name).joined(separator: ", "))")
    }
}
