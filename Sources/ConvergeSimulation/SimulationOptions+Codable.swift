import Converge

/// Options as JSON (a trace's header, a report): `{"scenario": …, "options": {…},
/// "derived": […]}`, every option by its name in the table. Decoding checks every value
/// against the table and requires every option, so a replay runs with exactly the
/// options recorded.
extension SimulationOptions: Codable {
    private enum CodingKeys: String, CodingKey {
        case scenario, options, derived
    }

    /// Encodes the scenario's name, every option and the names of the derived ones.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(scenarioName, forKey: .scenario)
        try container.encode(OptionValues(self), forKey: .options)
        try container.encode(derived, forKey: .derived)
    }

    /// Decodes options written by ``encode(to:)``.
    ///
    /// - Throws: ``ScenarioError`` naming an option that is unknown, missing, of the wrong
    ///   type or out of range.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard let name = try container.member(String.self, .scenario) else { throw ScenarioError("the options have no scenario name") }
        guard container.contains(.options), let values = try? container.nestedContainer(keyedBy: JSONCoding.MemberKey.self, forKey: .options)
        else { throw ScenarioError("the options have no \"options\" object") }
        var scenario = Scenario(name: name)
        // In byte order, so a header with several bad options names the same one in every process.
        for key in values.allKeys.sorted(by: { $0.stringValue.precedesInUTF8Order($1.stringValue) }) {
            guard let spec = SimulationOptionTable.spec(named: key.stringValue) else { throw SimulationOptionTable.unknown(key.stringValue) }
            try scenario.set(spec.name, OptionValue.decode(key, in: values, for: spec))
        }
        // An option with a fixed default may be absent: options written before it existed
        // (a trace recorded earlier) ran with what is now its default. One drawn from the seed
        // may not: the value the run drew is not known.
        for spec in SimulationOptionTable.specs where scenario.given[spec.name] == nil {
            guard case .fixed = spec.defaultValue else { throw ScenarioError("the options lack option \"\(spec.name)\"") }
        }
        self = try scenario.resolved(seed: 0)
        let derived = try container.member([String].self, .derived) ?? []
        for option in derived where SimulationOptionTable.spec(named: option) == nil { throw SimulationOptionTable.unknown(option) }
        self.derived = SimulationOptionTable.specs.map(\.name).filter(derived.contains)
    }
}

/// Every option's value by its name, as one JSON object (a report's `options`).
package struct OptionValues: Encodable {
    let options: SimulationOptions

    package init(_ options: SimulationOptions) { self.options = options }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: JSONCoding.MemberKey.self)
        for spec in SimulationOptionTable.specs {
            let key = JSONCoding.MemberKey(stringValue: spec.name)
            switch spec.value(in: options) {
            case .integer(let value): try container.encode(value, forKey: key)
            case .number(let value): try container.encode(value, forKey: key)
            case .choice(let value): try container.encode(value, forKey: key)
            }
        }
    }
}
