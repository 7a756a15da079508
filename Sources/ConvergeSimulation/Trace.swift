/// A run's trace as JSON Lines: a header (seed, variant, every resolved option), one line
/// per planned event (operations, faults, clock settings), one line per network decision,
/// and the result. It holds every input of the run, so ``SimulationInput/init(trace:)``
/// rebuilds the run without the seed's generator.
public enum Trace {
    public static let format = "converge-sim-trace"
    public static let version: Int64 = 1

    /// The trace of a finished run.
    public static func lines(input: SimulationInput, result: SimulationResult) -> [String] {
        var lines: [String] = []
        lines.append(JSON.object([
            ("type", .string(format)), ("version", .int(version)), ("seed", .string(String(input.seed))),
            ("variant", input.variant.map { .string($0.rawValue) } ?? .null), ("options", input.options.json),
        ]).serialized())
        for timed in input.plan { lines.append(encode(timed).serialized()) }
        for id in result.fates.keys.sorted() {
            lines.append(JSON.object([("type", .string("net")), ("message", .int(Int64(id))),
                                      ("delaysMs", .array(result.fates[id]!.delaysMs.map { .int(Int64($0)) }))]).serialized())
        }
        lines.append(JSON.object([("type", .string("result")), ("converged", .bool(result.converged)),
                                  ("violations", .array(result.violations.map(JSON.string))),
                                  ("digest", .string(result.digest))]).serialized())
        return lines
    }

    public static func text(input: SimulationInput, result: SimulationResult) -> String {
        lines(input: input, result: result).joined(separator: "\n") + "\n"
    }

    static func encode(_ timed: TimedEvent) -> JSON {
        func n(_ v: Int) -> JSON { .int(Int64(v)) }
        var members: [(String, JSON)] = []
        switch timed.event {
        case .set(let d, let key, let bytes): members = [("type", .string("set")), ("device", n(d)), ("key", n(key)), ("valueBytes", n(bytes))]
        case .remove(let d, let key): members = [("type", .string("remove")), ("device", n(d)), ("key", n(key))]
        case .synchronize(let d): members = [("type", .string("sync")), ("device", n(d))]
        case .read(let d, let key): members = [("type", .string("read")), ("device", n(d)), ("key", n(key))]
        case .partition(let group, let oneWay, let duration):
            members = [("type", .string("partition")), ("devices", .array(group.map(n))), ("oneWay", .bool(oneWay)), ("durationMs", n(duration))]
        case .offline(let d, let duration): members = [("type", .string("offline")), ("device", n(d)), ("durationMs", n(duration))]
        case .hubOutage(let duration): members = [("type", .string("hubOutage")), ("durationMs", n(duration))]
        case .crash(let d, let down): members = [("type", .string("crash")), ("device", n(d)), ("downMs", n(down))]
        case .switchAccount(let d, let duration): members = [("type", .string("switchAccount")), ("device", n(d)), ("durationMs", n(duration))]
        case .clock(let d, let offset, let drift): members = [("type", .string("clock")), ("device", n(d)), ("offsetMs", n(offset)), ("driftPpm", n(drift))]
        }
        members.insert(("t", n(timed.timeMs)), at: 1)
        return .object(members)
    }
}

/// What a trace holds, read back.
public struct ParsedTrace {
    public var input: SimulationInput
    /// The result the trace recorded, if it has one.
    public var recordedDigest: String?
    public var recordedViolations: [String]?
}

extension ParsedTrace {
    /// Parses a trace; every line is checked, and an error names the line.
    public init(text: String) throws(ScenarioError) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        guard let first = lines.first else { throw ScenarioError("the trace is empty") }
        let header = try Self.parse(first, line: 1)
        guard header["type"]?.stringValue == Trace.format else { throw ScenarioError("line 1: not a converge-sim trace (no \"\(Trace.format)\" header)") }
        guard header["version"]?.intValue == Trace.version else { throw ScenarioError("line 1: unsupported trace version \(header["version"]?.serialized() ?? "none")") }
        guard let seedText = header["seed"]?.stringValue, let seed = UInt64(seedText) else { throw ScenarioError("line 1: invalid seed") }
        var variant: BrokenVariant?
        if let name = header["variant"]?.stringValue {
            guard let v = BrokenVariant(rawValue: name) else { throw ScenarioError("line 1: unknown variant \(name)") }
            variant = v
        }
        guard let optionsJSON = header["options"] else { throw ScenarioError("line 1: no options") }
        let options: SimulationOptions
        do { options = try SimulationOptions(json: optionsJSON) } catch { throw ScenarioError("line 1: \(error.message)") }
        var plan: [TimedEvent] = []
        var fates: [Int: NetworkFate] = [:]
        var digest: String?
        var violations: [String]?
        for (offset, text) in lines.dropFirst().enumerated() {
            let number = offset + 2
            let json = try Self.parse(text, line: number)
            guard let type = json["type"]?.stringValue else { throw ScenarioError("line \(number): no \"type\"") }
            func int(_ name: String, _ range: ClosedRange<Int> = 0...Int(Int32.max)) throws(ScenarioError) -> Int {
                guard let value = json[name]?.intValue, value >= Int64(range.lowerBound), value <= Int64(range.upperBound) else {
                    throw ScenarioError("line \(number): \"\(name)\" must be an integer in \(range.lowerBound)...\(range.upperBound)")
                }
                return Int(value)
            }
            let devices = 0...(options.devices - 1)
            let keys = 0...(options.keys - 1)
            let event: PlannedEvent
            switch type {
            case "net":
                let id = try int("message")
                guard let delays = json["delaysMs"]?.arrayValue?.compactMap(\.intValue), delays.allSatisfy({ $0 >= 0 && $0 <= Int32.max }),
                      delays.count <= 2 else { throw ScenarioError("line \(number): \"delaysMs\" must be at most two non-negative integers") }
                fates[id] = NetworkFate(delaysMs: delays.map { Int($0) })
                continue
            case "result":
                digest = json["digest"]?.stringValue
                violations = json["violations"]?.arrayValue?.compactMap(\.stringValue)
                continue
            case "set": event = .set(device: try int("device", devices), key: try int("key", keys), valueBytes: try int("valueBytes", 0...16_777_216))
            case "remove": event = .remove(device: try int("device", devices), key: try int("key", keys))
            case "sync": event = .synchronize(device: try int("device", devices))
            case "read": event = .read(device: try int("device", devices), key: try int("key", keys))
            case "partition":
                guard let group = json["devices"]?.arrayValue?.compactMap(\.intValue), group.allSatisfy({ devices.contains(Int($0)) }),
                      let oneWay = json["oneWay"]?.boolValue else { throw ScenarioError("line \(number): invalid partition") }
                event = .partition(devices: group.map { Int($0) }, oneWay: oneWay, durationMs: try int("durationMs"))
            case "offline": event = .offline(device: try int("device", devices), durationMs: try int("durationMs"))
            case "hubOutage": event = .hubOutage(durationMs: try int("durationMs"))
            case "crash": event = .crash(device: try int("device", devices), downMs: try int("downMs", 1...Int(Int32.max)))
            case "switchAccount": event = .switchAccount(device: try int("device", devices), durationMs: try int("durationMs"))
            case "clock": event = .clock(device: try int("device", devices), offsetMs: try int("offsetMs", -604_800_000...604_800_000),
                                         driftPpm: try int("driftPpm", -100_000...100_000))
            default: throw ScenarioError("line \(number): unknown event type \"\(type)\"")
            }
            let time = try int("t")
            if let last = plan.last, last.timeMs > time { throw ScenarioError("line \(number): events are not in time order") }
            plan.append(TimedEvent(timeMs: time, event: event))
        }
        self.init(input: SimulationInput(seed: seed, options: options, plan: plan, recordedFates: fates, variant: variant),
                  recordedDigest: digest, recordedViolations: violations)
    }

    private static func parse(_ line: String, line number: Int) throws(ScenarioError) -> JSON {
        do { return try JSON(parsing: line) } catch { throw ScenarioError("line \(number): not valid JSON: \(error)") }
    }
}
