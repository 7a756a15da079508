import Converge

/// One option of a simulation: its name (as in scenario files), what values it takes,
/// and what a run uses when the scenario leaves it open.
public struct OptionSpec: Sendable {
    public enum Kind: Sendable {
        case integer(ClosedRange<Int>)
        case probability
        case number(ClosedRange<Double>)
        case choice([String])
    }

    /// What a run uses for an option the scenario does not set.
    public enum Default: Sendable {
        /// A fixed value.
        case fixed(JSON)
        /// Drawn from the seed ("swarm testing"): an integer range, a double range or a
        /// choice, and printed as derived.
        case swarmInteger(ClosedRange<Int>)
        case swarmNumber(ClosedRange<Double>)
        case swarmChoice([String])
    }

    public let name: String
    public let kind: Kind
    public let defaultValue: Default
    public let summary: String
}

/// Every option a scenario can set, in the order reports print them.
public enum SimulationOptionTable {
    public static let specs: [OptionSpec] = [
        OptionSpec(name: "devices", kind: .integer(1...64), defaultValue: .swarmInteger(2...8), summary: "number of devices"),
        OptionSpec(name: "topology", kind: .choice(["hub", "mesh"]), defaultValue: .fixed(.string("hub")), summary: "hub or mesh"),
        OptionSpec(name: "policy", kind: .choice(PolicyName.all), defaultValue: .fixed(.string("lww")), summary: "merge policy of every key"),
        OptionSpec(name: "operations", kind: .integer(0...10_000_000), defaultValue: .fixed(.int(2_000)), summary: "workload operations in the safety phase"),
        OptionSpec(name: "operationIntervalMs", kind: .integer(1...600_000), defaultValue: .swarmInteger(5...40), summary: "mean virtual time between operations"),
        OptionSpec(name: "setWeight", kind: .integer(0...1_000), defaultValue: .swarmInteger(30...60), summary: "relative frequency of set"),
        OptionSpec(name: "removeWeight", kind: .integer(0...1_000), defaultValue: .swarmInteger(0...20), summary: "relative frequency of remove"),
        OptionSpec(name: "syncWeight", kind: .integer(0...1_000), defaultValue: .swarmInteger(5...20), summary: "relative frequency of an explicit synchronize"),
        OptionSpec(name: "readWeight", kind: .integer(0...1_000), defaultValue: .swarmInteger(5...30), summary: "relative frequency of read"),
        OptionSpec(name: "keys", kind: .integer(1...1_000_000), defaultValue: .swarmInteger(4...64), summary: "distinct keys the workload uses"),
        OptionSpec(name: "keyDistribution", kind: .choice(["uniform", "zipf"]), defaultValue: .swarmChoice(["uniform", "zipf"]), summary: "key popularity"),
        OptionSpec(name: "zipfExponent", kind: .number(0...5), defaultValue: .swarmNumber(0.8...1.4), summary: "exponent of the Zipf popularity"),
        OptionSpec(name: "minValueBytes", kind: .integer(0...1_048_576), defaultValue: .swarmInteger(1...16), summary: "smallest value written"),
        OptionSpec(name: "maxValueBytes", kind: .integer(0...1_048_576), defaultValue: .swarmInteger(16...128), summary: "largest value written"),
        OptionSpec(name: "latency", kind: .choice(["uniform", "exponential"]), defaultValue: .swarmChoice(["uniform", "exponential"]), summary: "latency distribution"),
        OptionSpec(name: "minLatencyMs", kind: .integer(0...600_000), defaultValue: .swarmInteger(1...20), summary: "smallest latency"),
        OptionSpec(name: "maxLatencyMs", kind: .integer(0...600_000), defaultValue: .swarmInteger(20...200), summary: "largest latency (uniform) or minimum plus the mean (exponential)"),
        OptionSpec(name: "loss", kind: .probability, defaultValue: .swarmNumber(0...0.2), summary: "probability a message is lost"),
        OptionSpec(name: "duplicate", kind: .probability, defaultValue: .swarmNumber(0...0.1), summary: "probability a message is delivered twice"),
        OptionSpec(name: "reorder", kind: .probability, defaultValue: .swarmNumber(0...0.2), summary: "probability a message is held back (up to 10x the latency)"),
        OptionSpec(name: "queueCapacity", kind: .integer(1...1_000_000), defaultValue: .swarmInteger(16...256), summary: "messages in flight to one node; more are dropped"),
        OptionSpec(name: "partitions", kind: .integer(0...10_000), defaultValue: .swarmInteger(0...3), summary: "symmetric partitions (a group cut off from the rest)"),
        OptionSpec(name: "oneWayPartitions", kind: .integer(0...10_000), defaultValue: .swarmInteger(0...2), summary: "one-way partitions (a group's messages out are lost)"),
        OptionSpec(name: "partitionMs", kind: .integer(1...100_000_000), defaultValue: .swarmInteger(500...5_000), summary: "length of a partition"),
        OptionSpec(name: "offlinePeriods", kind: .integer(0...10_000), defaultValue: .swarmInteger(0...3), summary: "periods a device is offline"),
        OptionSpec(name: "offlineMs", kind: .integer(1...100_000_000), defaultValue: .swarmInteger(500...5_000), summary: "length of an offline period"),
        OptionSpec(name: "hubOutages", kind: .integer(0...10_000), defaultValue: .swarmInteger(0...2), summary: "periods the hub is down"),
        OptionSpec(name: "hubOutageMs", kind: .integer(1...100_000_000), defaultValue: .swarmInteger(200...3_000), summary: "length of a hub outage"),
        OptionSpec(name: "crashes", kind: .integer(0...10_000), defaultValue: .swarmInteger(0...3), summary: "device crashes (volatile state lost)"),
        OptionSpec(name: "restartMs", kind: .integer(1...100_000_000), defaultValue: .swarmInteger(10...1_000), summary: "time a crashed device stays down"),
        OptionSpec(name: "flushIntervalMs", kind: .integer(1...100_000_000), defaultValue: .swarmInteger(10...500), summary: "how often a device's disk makes writes durable"),
        OptionSpec(name: "clockSkewMs", kind: .integer(0...604_800_000), defaultValue: .swarmInteger(0...500), summary: "largest clock offset of a device, either way"),
        OptionSpec(name: "clockDriftPpm", kind: .integer(0...100_000), defaultValue: .swarmInteger(0...200), summary: "largest clock drift, in parts per million"),
        OptionSpec(name: "aheadDevices", kind: .integer(0...64), defaultValue: .fixed(.int(0)), summary: "devices whose clock runs aheadMs ahead"),
        OptionSpec(name: "aheadMs", kind: .integer(0...604_800_000), defaultValue: .fixed(.int(3_600_000)), summary: "how far ahead those clocks run"),
        OptionSpec(name: "accountSwitches", kind: .integer(0...10_000), defaultValue: .swarmInteger(0...2), summary: "devices switching to the second account and back"),
        OptionSpec(name: "retirementMs", kind: .integer(1...100_000_000_000), defaultValue: .swarmInteger(5_000...20_000), summary: "silence after which the hub retires a device"),
        OptionSpec(name: "returns", kind: .integer(0...10_000), defaultValue: .swarmInteger(0...1), summary: "devices silent past retirement that come back"),
        OptionSpec(name: "quotaKeys", kind: .integer(1...10_000_000), defaultValue: .fixed(.int(1_024)), summary: "quota: most keys"),
        OptionSpec(name: "quotaTotalBytes", kind: .integer(1...1_000_000_000), defaultValue: .fixed(.int(1_048_576)), summary: "quota: most bytes of values in total"),
        OptionSpec(name: "quotaValueBytes", kind: .integer(1...1_000_000_000), defaultValue: .fixed(.int(1_048_576)), summary: "quota: most bytes of one value"),
        OptionSpec(name: "quotaKeyBytes", kind: .integer(1...1_000), defaultValue: .fixed(.int(64)), summary: "quota: most bytes of a key"),
        OptionSpec(name: "syncIntervalMs", kind: .integer(1...100_000_000), defaultValue: .swarmInteger(50...1_000), summary: "how often each device synchronizes by itself"),
        OptionSpec(name: "livenessBoundMs", kind: .integer(1...100_000_000), defaultValue: .fixed(.int(120_000)), summary: "time after healing within which replicas must converge"),
    ]

    public static func spec(named name: String) -> OptionSpec? { specs.first { $0.name == name } }
}

/// Merge policy names of the command line and scenario files.
public enum PolicyName {
    public static let all = ["lww", "priority", "add-wins", "remove-wins", "multi-value"]
}

/// A problem with a scenario or an option: bad usage (exit code 2).
public struct ScenarioError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// What a scenario fixes: a name, a description and some options; the rest is left open.
public struct Scenario: Sendable {
    public var name: String
    public var summary: String
    /// The options set, in the table's order.
    public private(set) var given: [String: JSON] = [:]

    public init(name: String = "default", summary: String = "") {
        self.name = name
        self.summary = summary
    }

    /// The default scenario of `converge-sim run` with no file: four devices on a hub
    /// under a moderately hostile network; everything else from the seed.
    public static let standard: Scenario = {
        var scenario = Scenario(name: "default", summary: "four devices on a hub, a moderately hostile network; the rest drawn from the seed")
        try! scenario.set("devices", .int(4))
        return scenario
    }()

    /// Sets an option after checking it against the table.
    public mutating func set(_ name: String, _ value: JSON) throws(ScenarioError) {
        guard let spec = SimulationOptionTable.spec(named: name) else {
            throw ScenarioError("unknown option \"\(name)\"; known options: \(SimulationOptionTable.specs.map(\.name).joined(separator: ", "))")
        }
        given[name] = try Self.validated(value, for: spec)
    }

    static func validated(_ value: JSON, for spec: OptionSpec) throws(ScenarioError) -> JSON {
        switch spec.kind {
        case .integer(let range):
            guard let i = value.intValue, i >= Int64(range.lowerBound), i <= Int64(range.upperBound) else {
                throw ScenarioError("option \"\(spec.name)\" must be an integer in \(range.lowerBound)...\(range.upperBound), not \(value.serialized())")
            }
            return .int(i)
        case .probability:
            guard let d = value.doubleValue, d >= 0, d <= 1 else {
                throw ScenarioError("option \"\(spec.name)\" must be a probability in 0...1, not \(value.serialized())")
            }
            return .double(d)
        case .number(let range):
            guard let d = value.doubleValue, range.contains(d) else {
                throw ScenarioError("option \"\(spec.name)\" must be a number in \(range.lowerBound)...\(range.upperBound), not \(value.serialized())")
            }
            return .double(d)
        case .choice(let choices):
            guard let s = value.stringValue, choices.contains(s) else {
                throw ScenarioError("option \"\(spec.name)\" must be one of \(choices.joined(separator: ", ")), not \(value.serialized())")
            }
            return .string(s)
        }
    }

    /// Parses a scenario file: one JSON object with `name`, `description` and options.
    /// Unknown members, wrong types and values out of range are errors naming the member.
    public init(json text: String, fileName: String) throws(ScenarioError) {
        let parsed: JSON
        do { parsed = try JSON(parsing: text) } catch { throw ScenarioError("\(fileName): not valid JSON: \(error)") }
        guard let members = parsed.objectMembers else { throw ScenarioError("\(fileName): a scenario is a JSON object") }
        self.init(name: fileName, summary: "")
        for (key, value) in members {
            switch key {
            case "name":
                guard let s = value.stringValue, !s.isEmpty else { throw ScenarioError("\(fileName): \"name\" must be a non-empty string") }
                name = s
            case "description":
                guard let s = value.stringValue else { throw ScenarioError("\(fileName): \"description\" must be a string") }
                summary = s
            default:
                do { try set(key, value) } catch { throw ScenarioError("\(fileName): \(error.message)") }
            }
        }
    }

    /// Resolves every option: given ones as they are, the others fixed or drawn from the
    /// seed (with a generator of their own, so adding an option to a file does not change
    /// the draws of the others).
    public func resolved(seed: UInt64) throws(ScenarioError) -> SimulationOptions {
        var values: [(String, JSON)] = []
        var derived: [String] = []
        var generator = Xoshiro256StarStar(seed: seed ^ 0x5357_4152_4D00_0000)
        for spec in SimulationOptionTable.specs {
            // Draw for every option, used or not, so each option's draw is stable.
            let drawn: JSON?
            switch spec.defaultValue {
            case .fixed: drawn = nil; _ = generator.next()
            case .swarmInteger(let range): drawn = .int(Int64(generator.next(in: range)))
            case .swarmNumber(let range):
                let unit = generator.nextUnitDouble()
                drawn = .double(((range.lowerBound + unit * (range.upperBound - range.lowerBound)) * 1_000).rounded() / 1_000)
            case .swarmChoice(let choices): drawn = .string(generator.element(of: choices))
            }
            if let value = given[spec.name] {
                values.append((spec.name, value))
            } else if case .fixed(let value) = spec.defaultValue {
                values.append((spec.name, value))
            } else {
                values.append((spec.name, drawn!))
                derived.append(spec.name)
            }
        }
        var options = SimulationOptions(scenarioName: name, values: values, derived: derived)
        // Keep the drawn ranges consistent.
        if options.maxValueBytes < options.minValueBytes {
            if derived.contains("maxValueBytes") { options.setInteger("maxValueBytes", options.minValueBytes) }
            else if derived.contains("minValueBytes") { options.setInteger("minValueBytes", options.maxValueBytes) }
            else { throw ScenarioError("maxValueBytes (\(options.maxValueBytes)) is below minValueBytes (\(options.minValueBytes))") }
        }
        if options.maxLatencyMs < options.minLatencyMs {
            if derived.contains("maxLatencyMs") { options.setInteger("maxLatencyMs", options.minLatencyMs) }
            else if derived.contains("minLatencyMs") { options.setInteger("minLatencyMs", options.maxLatencyMs) }
            else { throw ScenarioError("maxLatencyMs (\(options.maxLatencyMs)) is below minLatencyMs (\(options.minLatencyMs))") }
        }
        if options.setWeight + options.removeWeight + options.syncWeight + options.readWeight == 0 && options.operations > 0 {
            throw ScenarioError("the operation weights are all zero")
        }
        return options
    }
}

/// Every option of one run, resolved: what the simulator runs with, and what a trace
/// records so that a replay needs nothing else.
public struct SimulationOptions: Sendable, Hashable {
    public var scenarioName: String
    /// Every option, in the table's order.
    public private(set) var values: [(String, JSON)]
    /// The options drawn from the seed.
    public var derived: [String]

    public static func == (lhs: SimulationOptions, rhs: SimulationOptions) -> Bool { lhs.json == rhs.json }
    public func hash(into hasher: inout Hasher) { hasher.combine(json) }

    init(scenarioName: String, values: [(String, JSON)], derived: [String]) {
        self.scenarioName = scenarioName
        self.values = values
        self.derived = derived
    }

    func value(_ name: String) -> JSON { values.first { $0.0 == name }!.1 }
    func integer(_ name: String) -> Int { Int(value(name).intValue!) }
    func number(_ name: String) -> Double { value(name).doubleValue! }
    func text(_ name: String) -> String { value(name).stringValue! }
    mutating func setInteger(_ name: String, _ newValue: Int) {
        let index = values.firstIndex { $0.0 == name }!
        values[index].1 = .int(Int64(newValue))
    }

    /// The options as one JSON object (for traces and reports).
    public var json: JSON {
        .object([("scenario", .string(scenarioName)), ("options", .object(values)), ("derived", .array(derived.map(JSON.string)))])
    }

    /// Reads options back from ``json`` (a trace header); checks every value.
    public init(json: JSON) throws(ScenarioError) {
        guard let name = json["scenario"]?.stringValue, let members = json["options"]?.objectMembers,
              let derived = json["derived"]?.arrayValue?.compactMap(\.stringValue)
        else { throw ScenarioError("the trace header has no valid options") }
        var scenario = Scenario(name: name)
        for (key, value) in members { try scenario.set(key, value) }
        for spec in SimulationOptionTable.specs where scenario.given[spec.name] == nil {
            throw ScenarioError("the trace header lacks option \"\(spec.name)\"")
        }
        self = try scenario.resolved(seed: 0)
        self.derived = derived
    }

    /// One line per option, derived ones marked.
    public var summaryLines: [String] {
        values.map { name, value in
            "  \(name) = \(value.serialized())" + (derived.contains(name) ? "   (derived from the seed)" : "")
        }
    }

    // MARK: Typed access

    public var devices: Int { integer("devices") }
    public var topology: SyncTopology { SyncTopology(rawValue: text("topology"))! }
    public var policy: String { text("policy") }
    public var operations: Int { integer("operations") }
    public var operationIntervalMs: Int { integer("operationIntervalMs") }
    public var setWeight: Int { integer("setWeight") }
    public var removeWeight: Int { integer("removeWeight") }
    public var syncWeight: Int { integer("syncWeight") }
    public var readWeight: Int { integer("readWeight") }
    public var keys: Int { integer("keys") }
    public var zipf: Bool { text("keyDistribution") == "zipf" }
    public var zipfExponent: Double { number("zipfExponent") }
    public var minValueBytes: Int { integer("minValueBytes") }
    public var maxValueBytes: Int { integer("maxValueBytes") }
    public var exponentialLatency: Bool { text("latency") == "exponential" }
    public var minLatencyMs: Int { integer("minLatencyMs") }
    public var maxLatencyMs: Int { integer("maxLatencyMs") }
    public var loss: Double { number("loss") }
    public var duplicate: Double { number("duplicate") }
    public var reorder: Double { number("reorder") }
    public var queueCapacity: Int { integer("queueCapacity") }
    public var partitions: Int { integer("partitions") }
    public var oneWayPartitions: Int { integer("oneWayPartitions") }
    public var partitionMs: Int { integer("partitionMs") }
    public var offlinePeriods: Int { integer("offlinePeriods") }
    public var offlineMs: Int { integer("offlineMs") }
    public var hubOutages: Int { integer("hubOutages") }
    public var hubOutageMs: Int { integer("hubOutageMs") }
    public var crashes: Int { integer("crashes") }
    public var restartMs: Int { integer("restartMs") }
    public var flushIntervalMs: Int { integer("flushIntervalMs") }
    public var clockSkewMs: Int { integer("clockSkewMs") }
    public var clockDriftPpm: Int { integer("clockDriftPpm") }
    public var aheadDevices: Int { integer("aheadDevices") }
    public var aheadMs: Int { integer("aheadMs") }
    public var accountSwitches: Int { integer("accountSwitches") }
    public var retirementMs: Int { integer("retirementMs") }
    public var returns: Int { integer("returns") }
    public var quota: Quota {
        Quota(maximumKeyCount: integer("quotaKeys"), maximumTotalValueBytes: integer("quotaTotalBytes"),
              maximumValueBytes: integer("quotaValueBytes"), maximumKeyBytes: integer("quotaKeyBytes"))
    }
    public var syncIntervalMs: Int { integer("syncIntervalMs") }
    public var livenessBoundMs: Int { integer("livenessBoundMs") }
}
