import ConvergeSimulation
import Foundation

// converge-sim: runs deterministic simulations of Converge replicas.
// Exit codes: 0 every run passed; 1 a checker failed (the reproduce command is printed);
// 2 bad usage.

let subcommands: [any Subcommand.Type] = [RunCommand.self, CompareCommand.self, SweepCommand.self, ReplayCommand.self, ShrinkCommand.self, ViewCommand.self,
                                          OptionsCommand.self]

let generalHelp = """
    converge-sim: deterministic simulations of Converge replicas syncing over a hostile network

    USAGE
      converge-sim                       run the default scenario over seeds 0..<5
    \(subcommands.map { "  " + $0.synopsis.replacingOccurrences(of: "\n", with: "\n  ") }.joined(separator: "\n"))
      converge-sim COMMAND --help

    Exit codes: 0 every run passed, 1 a checker failed, 2 bad usage.
    Policies: \(PolicyName.allCases.map(\.rawValue).joined(separator: ", ")).
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("converge-sim: \(message)\nRun `converge-sim --help` for usage.\n".utf8))
    exit(2)
}

var arguments = Array(CommandLine.arguments.dropFirst())
let name = arguments.first.map { $0.hasPrefix("-") ? RunCommand.name : $0 } ?? RunCommand.name
if let first = arguments.first, !first.hasPrefix("-") { arguments.removeFirst() }
let command = subcommands.first { $0.name == name }
if arguments.first == "--help" || arguments.first == "-h" || name == "help" {
    // `converge-sim --help` is general help; `converge-sim run --help` is run's.
    let named = CommandLine.arguments.count > 2 ? command : nil
    printLine(named?.help ?? generalHelp)
    exit(0)
}
do {
    guard let command else { throw UsageError("unknown command \"\(name)\"") }
    exit(try command.run(arguments))
} catch let error as UsageError {
    fail(error.message)
} catch {
    fail("\(error)")
}
