import ConvergeSimulation
import Foundation

/// `converge-sim view`: draws a trace as a space-time diagram in one HTML file.
enum ViewCommand: Subcommand {
    static let name = "view"
    static var synopsis: String { Flag.synopsis(name, ["TRACE"], flags: flags) }

    struct Arguments {
        var path: String?
        var output: String?
    }

    static let flags: [Flag<Arguments>] = [
        Flag(name: "-o", value: "OUT.html", help: "the page to write (required)") { arguments, value throws(UsageError) in
            arguments.output = value
        },
    ]

    static var help: String {
        """
        \(synopsis)

        Re-runs a trace (as replay does: everything comes from the trace, so the run is the
        one recorded) and draws it as a space-time diagram in one self-contained HTML page:
        the hub and each device as lanes, messages as arrows (lost, dropped and duplicated
        ones marked), writes, removes, syncs and conflicts, crashes, partitions, outages
        and full disks, the heal, and the first violation highlighted. Open it in any
        browser; nothing is fetched. A trace comes from `run --trace`, `shrink` or a
        failing sweep.
        """ + "\n\n" + Flag.helpLines(flags).joined(separator: "\n")
    }

    static func run(_ words: [String]) throws(UsageError) -> Int32 {
        var arguments = Arguments()
        try Flag.parse(words, flags: flags, command: name, into: &arguments) { arguments, word throws(UsageError) in
            guard arguments.path == nil else { throw UsageError("view takes one trace") }
            arguments.path = word
        }
        guard let path = arguments.path else { throw UsageError("view needs a TRACE file") }
        guard let output = arguments.output else { throw UsageError("view needs -o OUT.html") }
        let trace = try readTrace(path)
        let simulation = Simulation(trace.input)
        simulation.recordTimeline()
        let result = simulation.run()
        let title = URL(fileURLWithPath: path).lastPathComponent
        let page = SpaceTimeDiagram.html(input: trace.input, result: result, title: title,
                                         reproduce: "swift run converge-sim replay \(path)")
        try writeText(page, to: output)
        let digestNote = trace.recordedDigest.map { $0 == result.digest ? "the run matches the trace's digest" : "the run's digest differs from the trace's: the page shows this run" }
        printLine("wrote \(output): \(result.options.devices + 1) lanes, \(result.violations.count) violation(s)"
                  + (digestNote.map { "; \($0)" } ?? ""))
        return 0
    }
}
