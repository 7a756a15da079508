/// A run's trace as JSON Lines: a header (seed, variant, every resolved option), one line
/// per planned event (operations, faults, clock settings), one line per network decision
/// other than a delivery after the minimum latency, and the result. It holds every input of the run, so ``ParsedTrace/init(text:)``
/// rebuilds the run without the seed's generator.
public enum Trace {
    /// The `type` of a trace's first line.
    static let format = "converge-sim-trace"
    /// The format's version: 2 since violations are objects with a kind, 3 since messages
    /// are named by link and number on the link (`"message": "d0>hub#3"`).
    static let version = 3

    /// The trace of a finished run, one JSON object per line.
    ///
    /// - Parameters:
    ///   - input: What the run was given.
    ///   - result: What it gave.
    public static func lines(input: SimulationInput, result: SimulationResult) -> [String] {
        var lines: [String] = []
        var header = TraceLine(type: format)
        header.version = version
        header.seed = String(input.seed)
        header.variant = input.variant?.rawValue
        header.options = input.options
        lines.append(JSONCoding.encoded(header))
        for timed in input.plan { lines.append(JSONCoding.encoded(TraceLine(timed))) }
        // A message the trace has no decision for is delivered once after the minimum
        // latency: decisions that say just that are left out.
        for id in result.fates.keys.sorted() where result.fates[id]?.delaysMs != [input.options.minLatencyMs] {
            var decision = TraceLine(type: "net")
            decision.message = id.description
            decision.delaysMs = result.fates[id]?.delaysMs
            lines.append(JSONCoding.encoded(decision))
        }
        var outcome = TraceLine(type: "result")
        outcome.converged = result.converged
        outcome.violations = result.violations
        outcome.digest = result.digest
        lines.append(JSONCoding.encoded(outcome))
        return lines
    }

    /// The trace of a finished run as one text, a line per JSON object.
    public static func text(input: SimulationInput, result: SimulationResult) -> String {
        lines(input: input, result: result).joined(separator: "\n") + "\n"
    }
}

/// What a trace holds, read back.
public struct ParsedTrace: Sendable {
    /// The run the trace recorded, with its network decisions: running it replays the trace.
    public var input: SimulationInput
    /// The digest the trace recorded, if it has a result.
    public var recordedDigest: String?
    /// The violations the trace recorded, if it has a result.
    public var recordedViolations: [Violation]?
}

extension ParsedTrace {
    /// Parses a trace; every line is checked.
    ///
    /// - Throws: ``ScenarioError`` naming the line and the member that is wrong.
    public init(text: String) throws(ScenarioError) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        guard let first = lines.first else { throw ScenarioError("the trace is empty") }
        let header = try Self.decode(first, line: 1)
        guard header.type == Trace.format else { throw ScenarioError("line 1: not a converge-sim trace (no \"\(Trace.format)\" header)") }
        guard header.version == Trace.version else {
            let renumbered = header.version == 2 ? "; version 2 numbered messages for the whole run: run its seed again for a new trace" : ""
            throw ScenarioError("line 1: unsupported trace version \(header.version.map(String.init) ?? "none") (this converge-sim reads version \(Trace.version)\(renumbered))")
        }
        guard let seedText = header.seed, let seed = UInt64(seedText) else { throw ScenarioError("line 1: invalid seed") }
        var variant: BrokenVariant?
        if let name = header.variant {
            guard let known = BrokenVariant(rawValue: name) else { throw ScenarioError("line 1: unknown variant \(name)") }
            variant = known
        }
        guard let options = header.options else { throw ScenarioError("line 1: no options") }
        var plan: [TimedEvent] = []
        var fates: [MessageID: NetworkFate] = [:]
        var digest: String?
        var violations: [Violation]?
        for (offset, text) in lines.dropFirst().enumerated() {
            let number = offset + 2
            let line = try Self.decode(text, line: number)
            do throws(ScenarioError) {
                switch line.type {
                case "net":
                    let (id, fate) = try line.networkDecision()
                    fates[id] = fate
                case "result":
                    digest = line.digest
                    violations = line.violations
                default:
                    let timed = try line.timedEvent(options: options)
                    if let last = plan.last, last.timeMs > timed.timeMs { throw ScenarioError("events are not in time order") }
                    plan.append(timed)
                }
            } catch {
                throw ScenarioError("line \(number): \(error.message)")
            }
        }
        self.init(input: SimulationInput(seed: seed, options: options, plan: plan, recordedFates: fates, variant: variant),
                  recordedDigest: digest, recordedViolations: violations)
    }

    private static func decode(_ text: String, line number: Int) throws(ScenarioError) -> TraceLine {
        do { return try JSONCoding.decode(TraceLine.self, from: text) } catch { throw ScenarioError("line \(number): \(error.message)") }
    }
}

/// One line of a trace: the members of every kind of line; a line has those of its `type`
/// (absent members are left out of the JSON).
struct TraceLine: Codable {
    var type: String
    // The header.
    var version: Int?
    var seed: String?
    var variant: String?
    var options: SimulationOptions?
    // A planned event.
    var t: Int?
    var device: Int?
    var key: Int?
    var valueBytes: Int?
    var devices: [Int]?
    var oneWay: Bool?
    var durationMs: Int?
    var downMs: Int?
    var offsetMs: Int?
    var driftPpm: Int?
    // A network decision.
    var message: String?
    var delaysMs: [Int]?
    // The result.
    var converged: Bool?
    var violations: [Violation]?
    var digest: String?

    init(type: String) { self.type = type }

    init(from decoder: any Decoder) throws {
        let members = try decoder.container(keyedBy: CodingKeys.self)
        guard let type = try members.member(String.self, .type) else { throw ScenarioError("no \"type\"") }
        self.type = type
        version = try members.member(Int.self, .version)
        seed = try members.member(String.self, .seed)
        variant = try members.member(String.self, .variant)
        options = try members.member(SimulationOptions.self, .options)
        t = try members.member(Int.self, .t)
        device = try members.member(Int.self, .device)
        key = try members.member(Int.self, .key)
        valueBytes = try members.member(Int.self, .valueBytes)
        devices = try members.member([Int].self, .devices)
        oneWay = try members.member(Bool.self, .oneWay)
        durationMs = try members.member(Int.self, .durationMs)
        downMs = try members.member(Int.self, .downMs)
        offsetMs = try members.member(Int.self, .offsetMs)
        driftPpm = try members.member(Int.self, .driftPpm)
        message = try members.member(String.self, .message)
        delaysMs = try members.member([Int].self, .delaysMs)
        converged = try members.member(Bool.self, .converged)
        violations = try members.member([Violation].self, .violations)
        digest = try members.member(String.self, .digest)
    }

    /// The line of a planned event.
    init(_ timed: TimedEvent) {
        t = timed.timeMs
        switch timed.event {
        case .set(let d, let key, let bytes): type = "set"; device = d; self.key = key; valueBytes = bytes
        case .remove(let d, let key): type = "remove"; device = d; self.key = key
        case .synchronize(let d): type = "sync"; device = d
        case .read(let d, let key): type = "read"; device = d; self.key = key
        case .partition(let group, let oneWay, let duration): type = "partition"; devices = group; self.oneWay = oneWay; durationMs = duration
        case .offline(let d, let duration): type = "offline"; device = d; durationMs = duration
        case .hubOutage(let duration): type = "hubOutage"; durationMs = duration
        case .hubCrash(let down): type = "hubCrash"; downMs = down
        case .hubBackup: type = "hubBackup"
        case .hubRestore(let down): type = "hubRestore"; downMs = down
        case .crash(let d, let down): type = "crash"; device = d; downMs = down
        case .switchAccount(let d, let duration): type = "switchAccount"; device = d; durationMs = duration
        case .clock(let d, let offset, let drift): type = "clock"; device = d; offsetMs = offset; driftPpm = drift
        case .clockJump(let d, let by): type = "clockJump"; device = d; offsetMs = by
        case .diskFull(let d, let duration): type = "diskFull"; device = d; durationMs = duration
        case .deviceBackup(let d): type = "deviceBackup"; device = d
        case .deviceRestore(let d, let down): type = "deviceRestore"; device = d; downMs = down
        case .deviceClone(let from, let to, let down): type = "deviceClone"; devices = [from, to]; downMs = down
        }
    }

    /// The planned event of this line, every member checked against `options`.
    func timedEvent(options: SimulationOptions) throws(ScenarioError) -> TimedEvent {
        func required(_ value: Int?, _ name: String, _ range: ClosedRange<Int> = 0...Int(Int32.max)) throws(ScenarioError) -> Int {
            guard let value, range.contains(value) else {
                throw ScenarioError("\"\(name)\" must be an integer in \(range.lowerBound)...\(range.upperBound)")
            }
            return value
        }
        let devices = 0...(options.devices - 1)
        let keys = 0...(options.keys - 1)
        let event: PlannedEvent
        switch type {
        case "set":
            event = .set(device: try required(device, "device", devices), key: try required(key, "key", keys),
                         valueBytes: try required(valueBytes, "valueBytes", 0...16_777_216))
        case "remove": event = .remove(device: try required(device, "device", devices), key: try required(key, "key", keys))
        case "sync": event = .synchronize(device: try required(device, "device", devices))
        case "read": event = .read(device: try required(device, "device", devices), key: try required(key, "key", keys))
        case "partition":
            guard let group = self.devices, group.allSatisfy(devices.contains), let oneWay else {
                throw ScenarioError("invalid partition: \"devices\" must be devices of the run and \"oneWay\" true or false")
            }
            event = .partition(devices: group, oneWay: oneWay, durationMs: try required(durationMs, "durationMs"))
        case "offline": event = .offline(device: try required(device, "device", devices), durationMs: try required(durationMs, "durationMs"))
        case "hubOutage": event = .hubOutage(durationMs: try required(durationMs, "durationMs"))
        case "hubCrash": event = .hubCrash(downMs: try required(downMs, "downMs", 1...Int(Int32.max)))
        case "hubBackup": event = .hubBackup
        case "hubRestore": event = .hubRestore(downMs: try required(downMs, "downMs", 1...Int(Int32.max)))
        case "crash": event = .crash(device: try required(device, "device", devices), downMs: try required(downMs, "downMs", 1...Int(Int32.max)))
        case "switchAccount":
            event = .switchAccount(device: try required(device, "device", devices), durationMs: try required(durationMs, "durationMs"))
        case "clock":
            event = .clock(device: try required(device, "device", devices),
                           offsetMs: try required(offsetMs, "offsetMs", -604_800_000...604_800_000),
                           driftPpm: try required(driftPpm, "driftPpm", -100_000...100_000))
        case "diskFull":
            event = .diskFull(device: try required(device, "device", devices), durationMs: try required(durationMs, "durationMs"))
        case "clockJump":
            event = .clockJump(device: try required(device, "device", devices),
                               byMs: try required(offsetMs, "offsetMs", -604_800_000...604_800_000))
        case "deviceClone":
            guard let pair = self.devices, pair.count == 2, pair.allSatisfy(devices.contains), pair[0] != pair[1] else {
                throw ScenarioError("invalid deviceClone: \"devices\" must be two different devices of the run, [from, to]")
            }
            event = .deviceClone(from: pair[0], to: pair[1], downMs: try required(downMs, "downMs", 1...Int(Int32.max)))
        case "deviceBackup": event = .deviceBackup(device: try required(device, "device", devices))
        case "deviceRestore":
            event = .deviceRestore(device: try required(device, "device", devices), downMs: try required(downMs, "downMs", 1...Int(Int32.max)))
        default: throw ScenarioError("unknown event type \"\(type)\"")
        }
        return TimedEvent(timeMs: try required(t, "t"), event: event)
    }

    /// The network decision of this line: a message (its link and number) and its fate.
    func networkDecision() throws(ScenarioError) -> (id: MessageID, fate: NetworkFate) {
        guard let text = message, let id = MessageID(text) else {
            throw ScenarioError("\"message\" must name a link and a number on it, as \"d0>hub#3\"")
        }
        guard let delays = delaysMs, delays.count <= 2, delays.allSatisfy({ $0 >= 0 && $0 <= Int(Int32.max) }) else {
            throw ScenarioError("\"delaysMs\" must be at most two non-negative integers")
        }
        return (id, NetworkFate(delaysMs: delays))
    }
}
