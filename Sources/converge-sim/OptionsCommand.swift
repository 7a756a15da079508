import ConvergeSimulation

/// `converge-sim options`: every option a scenario can set, from the option table.
enum OptionsCommand: Subcommand {
    static let name = "options"
    static let synopsis = "converge-sim options"

    static var help: String {
        """
        converge-sim options

        Lists every option a scenario file (or --NAME VALUE on the command line) can set: its
        name, what it does, the values it takes, and what a run uses when it is left open.
        """
    }

    static func run(_ words: [String]) throws(UsageError) -> Int32 {
        if let word = words.first { throw UsageError("options takes no argument, not \"\(word)\"") }
        for spec in SimulationOptionTable.specs {
            printLine("\(spec.name.padding(toLength: 20, withPad: " ", startingAt: 0)) \(spec.summary); \(spec.expectation); \(spec.defaultDescription)")
        }
        return 0
    }
}
