import Converge
import Foundation

/// A problem with a scenario, an option or a trace: bad usage (`converge-sim` exits with
/// code 2). The message names what is wrong: the option or member, what it takes, and
/// what it got.
public struct ScenarioError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong, in words.
    public var message: String

    /// An error saying `message`.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { message }
}

/// What a scenario fixes: a name, a description and some options; the rest is left open,
/// to be drawn from the seed when the scenario is ``resolved(seed:)``.
///
/// ```swift
/// var scenario = Scenario(name: "small")
/// try scenario.set(\.devices, to: 3)
/// try scenario.set(\.topology, to: .mesh)
/// let result = Simulation(try SimulationInput(scenario: scenario, seed: 1)).run()
/// ```
public struct Scenario: Sendable {
    /// The scenario's name, printed in reports.
    public var name: String
    /// What the scenario shows.
    public var summary: String
    /// The options set, by name.
    package private(set) var given: [String: OptionValue] = [:]

    /// A scenario that sets no option.
    public init(name: String = "default", summary: String = "") {
        self.name = name
        self.summary = summary
    }

    /// The default scenario of `converge-sim run` with no file: four devices on a hub
    /// under a moderately hostile network; everything else from the seed.
    public static let standard: Scenario = {
        var scenario = Scenario(name: "default", summary: "four devices on a hub, a moderately hostile network; the rest drawn from the seed")
        scenario.given["devices"] = .integer(4)
        return scenario
    }()

    /// Sets an option.
    ///
    /// - Parameters:
    ///   - option: The property of ``SimulationOptions`` to set, for example `\.devices`.
    ///   - value: Its value.
    /// - Throws: ``ScenarioError`` if `option` is not an option a scenario sets (such as
    ///   ``SimulationOptions/derived``), or `value` is out of its range; the scenario is
    ///   then unchanged.
    public mutating func set<Value>(_ option: KeyPath<SimulationOptions, Value>, to value: Value) throws(ScenarioError) {
        guard let spec = SimulationOptionTable.spec(for: option) else { throw ScenarioError("\(option) is not an option a scenario sets") }
        let optionValue: OptionValue
        switch value {
        case let integer as Int: optionValue = .integer(integer)
        case let number as Double: optionValue = .number(number)
        case let choice as any RawRepresentable:
            guard let text = choice.rawValue as? String else { throw ScenarioError("option \"\(spec.name)\" must be \(spec.expectation)") }
            optionValue = .choice(text)
        default: throw ScenarioError("option \"\(spec.name)\" must be \(spec.expectation)")
        }
        given[spec.name] = try spec.validated(optionValue)
    }

    /// Sets the option called `name` after checking it against the table.
    package mutating func set(_ name: String, _ value: OptionValue) throws(ScenarioError) {
        guard let spec = SimulationOptionTable.spec(named: name) else { throw SimulationOptionTable.unknown(name) }
        given[name] = try spec.validated(value)
    }

    /// Sets the option called `name` from command-line text.
    package mutating func set(_ name: String, parsing text: String) throws(ScenarioError) {
        guard let spec = SimulationOptionTable.spec(named: name) else { throw SimulationOptionTable.unknown(name) }
        given[name] = try spec.value(parsing: text)
    }

    /// Resolves every option: given ones as they are, the others fixed or drawn from the
    /// seed (with a generator of their own, so adding an option to a file does not change
    /// the draws of the others).
    ///
    /// - Throws: ``ScenarioError`` if the options contradict each other (a largest value
    ///   below the smallest, all operation weights zero).
    public func resolved(seed: UInt64) throws(ScenarioError) -> SimulationOptions {
        var options = SimulationOptions(scenarioName: name)
        var generator = Xoshiro256StarStar(seed: seed ^ 0x5357_4152_4D00_0000)
        for spec in SimulationOptionTable.specs {
            // Draw for every option, used or not, so each option's draw is stable.
            let drawn: OptionValue?
            switch spec.defaultValue {
            case .fixed: drawn = nil; _ = generator.next()
            case .swarmInteger(let range): drawn = .integer(generator.next(in: range))
            case .swarmNumber(let range):
                let unit = generator.nextUnitDouble()
                drawn = .number(((range.lowerBound + unit * (range.upperBound - range.lowerBound)) * 1_000).rounded() / 1_000)
            case .swarmChoice(let choices): drawn = .choice(generator.element(of: choices))
            }
            if let value = given[spec.name] {
                try spec.set(value, in: &options)
            } else if case .fixed(let value) = spec.defaultValue {
                try spec.set(value, in: &options)
            } else if let drawn {
                try spec.set(drawn, in: &options)
                options.derived.append(spec.name)
            }
        }
        // Keep the drawn ranges consistent.
        if options.maxValueBytes < options.minValueBytes {
            if options.derived.contains("maxValueBytes") { options.maxValueBytes = options.minValueBytes }
            else if options.derived.contains("minValueBytes") { options.minValueBytes = options.maxValueBytes }
            else { throw ScenarioError("maxValueBytes (\(options.maxValueBytes)) is below minValueBytes (\(options.minValueBytes))") }
        }
        if options.maxLatencyMs < options.minLatencyMs {
            if options.derived.contains("maxLatencyMs") { options.maxLatencyMs = options.minLatencyMs }
            else if options.derived.contains("minLatencyMs") { options.minLatencyMs = options.maxLatencyMs }
            else { throw ScenarioError("maxLatencyMs (\(options.maxLatencyMs)) is below minLatencyMs (\(options.minLatencyMs))") }
        }
        if options.setWeight + options.removeWeight + options.syncWeight + options.readWeight == 0 && options.operations > 0 {
            throw ScenarioError("the operation weights are all zero")
        }
        return options
    }
}

// MARK: Scenario files

extension Scenario {
    /// Parses a scenario file: one JSON object with `name`, `description` and options.
    ///
    /// - Parameters:
    ///   - text: The file's contents.
    ///   - fileName: The file's name, for messages (and the scenario's name if the file
    ///     gives none).
    /// - Throws: ``ScenarioError`` naming the file and what is wrong: text that is not
    ///   JSON, an unknown member, a member of the wrong type, a value out of range.
    public init(json text: String, fileName: String) throws(ScenarioError) {
        do {
            self = try JSONCoding.decode(ScenarioFile.self, from: text).scenario
        } catch {
            throw ScenarioError("\(fileName): \(error.message)")
        }
        if name.isEmpty { name = fileName }
    }
}

/// The JSON of a scenario file, decoded member by member through the option table.
private struct ScenarioFile: Decodable {
    var scenario = Scenario(name: "", summary: "")

    init(from decoder: any Decoder) throws {
        let members: KeyedDecodingContainer<JSONCoding.MemberKey>
        do { members = try decoder.container(keyedBy: JSONCoding.MemberKey.self) } catch {
            throw ScenarioError("a scenario is a JSON object")
        }
        for key in members.allKeys.sorted(by: { $0.stringValue.precedesInUTF8Order($1.stringValue) }) {
            switch key.stringValue {
            case "name":
                guard let name = try? members.decode(String.self, forKey: key), !name.isEmpty else {
                    throw ScenarioError("\"name\" must be a non-empty string")
                }
                scenario.name = name
            case "description":
                guard let summary = try? members.decode(String.self, forKey: key) else {
                    throw ScenarioError("\"description\" must be a string")
                }
                scenario.summary = summary
            default:
                guard let spec = SimulationOptionTable.spec(named: key.stringValue) else {
                    throw SimulationOptionTable.unknown(key.stringValue)
                }
                try scenario.set(spec.name, OptionValue.decode(key, in: members, for: spec))
            }
        }
    }
}

extension OptionValue {
    /// The value of member `key`, for `spec`: an integer, a number or a string, else an
    /// error naming the option, what it takes and what it got.
    static func decode<Key: CodingKey>(_ key: Key, in members: KeyedDecodingContainer<Key>, for spec: OptionSpec)
        throws(ScenarioError) -> OptionValue {
        if let integer = try? members.decode(Int.self, forKey: key) { return .integer(integer) }
        if let number = try? members.decode(Double.self, forKey: key) { return .number(number) }
        if let text = try? members.decode(String.self, forKey: key) { return .choice(text) }
        let found: String
        if let flag = try? members.decode(Bool.self, forKey: key) {
            found = String(flag)
        } else if (try? members.decodeNil(forKey: key)) == true {
            found = "null"
        } else {
            found = "an array or an object"
        }
        throw ScenarioError("option \"\(spec.name)\" must be \(spec.expectation), not \(found)")
    }
}
