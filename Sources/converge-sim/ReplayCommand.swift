import ConvergeSimulation

/// `converge-sim replay`: re-runs a trace and checks that it gives the same report.
enum ReplayCommand: Subcommand {
    static let name = "replay"
    static var synopsis: String { Flag.synopsis(name, ["TRACE"], flags: flags) }

    struct Arguments {
        var path: String?
        var json = false
        var story = false
        var everyMessage = false
    }

    static let flags: [Flag<Arguments>] = [
        Flag(name: "--json", value: nil, help: "the report as one JSON object") { arguments, _ in arguments.json = true },
        Flag(name: "--story", value: nil, help: "after the report, tell the run as a story (writes, lost messages, end state)") {
            arguments, _ in arguments.story = true
        },
        Flag(name: "--every-message", value: nil, help: "with --story: tell every message, and every line, not only those that changed something") {
            arguments, _ in arguments.everyMessage = true
        },
    ]

    static var help: String {
        """
        \(synopsis)

        Re-runs a recorded trace without the seed's generator (every operation, fault and
        network decision comes from the trace) and checks that the report matches the one
        recorded. Exit code 1 if a checker fails or the replay differs.
        """ + "\n\n" + Flag.helpLines(flags).joined(separator: "\n")
    }

    static func run(_ words: [String]) throws(UsageError) -> Int32 {
        var arguments = Arguments()
        try Flag.parse(words, flags: flags, command: name, into: &arguments) { arguments, word throws(UsageError) in
            guard arguments.path == nil else { throw UsageError("replay takes one trace") }
            arguments.path = word
        }
        guard let path = arguments.path else { throw UsageError("replay needs a TRACE file") }
        let trace = try readTrace(path)
        var result = SimulationRunner.run(trace.input)
        if let recorded = trace.recordedDigest, recorded != result.digest {
            result.violations.append(Violation(.replay, "the digest \(result.digest) differs from the recorded \(recorded)"))
        }
        let reproduce = "swift run converge-sim replay \(path)"
        printLine(arguments.json ? Report.jsonLine(result, reproduce: reproduce) : Report.text(result, reproduce: reproduce, fullOptions: true))
        if !arguments.json, trace.recordedDigest == result.digest { printLine("  replay matches the recorded digest") }
        if arguments.story && !arguments.json {
            let (_, story) = RunStory.tell(trace.input, maximumLines: arguments.everyMessage ? .max : 120, everyMessage: arguments.everyMessage)
            for line in story { printLine(line) }
        }
        return result.passed ? 0 : 1
    }
}
