import ConvergeSimulation
import Foundation

/// Bad usage: printed with a hint, exit code 2.
struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// One subcommand of `converge-sim`: its name, its synopsis and help, and what it does.
/// `main.swift` dispatches to them and prints their help.
protocol Subcommand {
    /// The word that selects it.
    static var name: String { get }
    /// One line: the command with its arguments.
    static var synopsis: String { get }
    /// `converge-sim NAME --help`.
    static var help: String { get }
    /// Runs with the arguments after the command's name; returns the exit code.
    static func run(_ arguments: [String]) throws(UsageError) -> Int32
}

/// A command-line flag: how it is spelled, the value it takes, its help, and what it sets.
/// A command's flags are one table from which both its parser and its help are made.
struct Flag<Arguments>: Sendable {
    /// The flag, with its dashes: `--seed`.
    let name: String
    /// The value's placeholder (`N`, `FILE`), or `nil` for a flag that takes none.
    let value: String?
    /// What it does, in words.
    let help: String
    /// Whether the command needs it (a synopsis shows it without brackets).
    var required = false
    /// Sets it in the arguments from its value (`""` for a flag without one).
    let apply: @Sendable (inout Arguments, String) throws(UsageError) -> Void

    /// The flag as help prints it: `--seed N`.
    var spelling: String { value.map { "\(name) \($0)" } ?? name }

    /// Help lines for `flags`: each spelling, its help beside it.
    static func helpLines(_ flags: [Flag]) -> [String] {
        let width = 24
        return flags.map { flag in
            if flag.spelling.count > width {
                return "  \(flag.spelling)\n  \(String(repeating: " ", count: width))  \(flag.help)"
            }
            return "  \(flag.spelling.padding(toLength: width, withPad: " ", startingAt: 0))  \(flag.help)"
        }
    }

    /// A synopsis: `converge-sim COMMAND` and every flag in brackets, wrapped.
    static func synopsis(_ command: String, _ words: [String], flags: [Flag]) -> String {
        var lines = ["converge-sim \(command)"]
        for word in words + flags.map({ $0.required ? $0.spelling : "[\($0.spelling)]" }) {
            if lines[lines.count - 1].count + 1 + word.count > 88 { lines.append(String(repeating: " ", count: 13 + command.count)) }
            lines[lines.count - 1] += " " + word
        }
        return lines.joined(separator: "\n")
    }

    /// Parses `arguments` against `flags`; every other word goes to `positional`.
    static func parse(_ arguments: [String], flags: [Flag], command: String, into parsed: inout Arguments,
                      positional: (inout Arguments, String) throws(UsageError) -> Void) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if let flag = flags.first(where: { $0.name == argument }) {
                var value = ""
                if flag.value != nil {
                    index += 1
                    guard index < arguments.count else { throw UsageError("\(argument) needs a value") }
                    value = arguments[index]
                }
                try flag.apply(&parsed, value)
            } else if argument.hasPrefix("-") {
                throw UsageError("unknown option \(argument) for \(command)")
            } else {
                try positional(&parsed, argument)
            }
            index += 1
        }
    }
}

func printLine(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// A line on standard error (notes that must not mix with `--json` output).
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

func readText(_ path: String) throws(UsageError) -> String {
    guard let data = FileManager.default.contents(atPath: path) else { throw UsageError("cannot read \(path)") }
    guard let text = String(data: data, encoding: .utf8) else { throw UsageError("\(path): not UTF-8 text") }
    return text
}

func writeText(_ text: String, to path: String) throws(UsageError) {
    guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else { throw UsageError("cannot write \(path)") }
}

/// Reads and parses a trace file.
func readTrace(_ path: String) throws(UsageError) -> ParsedTrace {
    let text = try readText(path)
    do { return try ParsedTrace(text: text) } catch { throw UsageError("\(path): \(error.message)") }
}
