import ConvergeSimulation

/// `converge-sim shrink`: reduces a failing trace to a small one that still fails.
enum ShrinkCommand: Subcommand {
    static let name = "shrink"
    static var synopsis: String { Flag.synopsis(name, ["TRACE"], flags: flags) }

    struct Arguments {
        var path: String?
        var output: String?
    }

    static let flags: [Flag<Arguments>] = [
        Flag(name: "--output", value: "FILE", help: "where to write the shrunk trace (default: TRACE with .shrunk.jsonl)") {
            arguments, text in arguments.output = text
        },
    ]

    static var help: String {
        """
        \(synopsis)

        Reduces a failing trace (operations, faults and network decisions) to a small trace
        that still fails the most telling of its checkers (a lost write before the wrong
        value that follows from it), writes it, and tells the shrunk run as a story:
        who wrote what, which messages were lost, what each replica holds at the end.
        The number of runs it may try grows with the trace (40 per event and network
        fault, 3,000 to 30,000).
        """ + "\n\n" + Flag.helpLines(flags).joined(separator: "\n")
    }

    static func run(_ words: [String]) throws(UsageError) -> Int32 {
        var arguments = Arguments()
        try Flag.parse(words, flags: flags, command: name, into: &arguments) { arguments, word throws(UsageError) in
            guard arguments.path == nil else { throw UsageError("shrink takes one trace") }
            arguments.path = word
        }
        guard let path = arguments.path else { throw UsageError("shrink needs a TRACE file") }
        let trace = try readTrace(path)
        let original = SimulationRunner.run(trace.input, checkDeterminism: false)
        guard !original.passed else {
            printLine("the trace passes every checker: nothing to shrink")
            return 0
        }
        let events = trace.input.plan.count
        let kind = Shrinker.kindToKeep(of: original.violations) ?? original.violations[0].kind
        let (shrunk, runs) = Shrinker().shrink(trace.input, keepingFailure: kind)
        let (result, story) = RunStory.tell(shrunk)
        let destination = arguments.output ?? (path.hasSuffix(".jsonl") ? String(path.dropLast(6)) : path) + ".shrunk.jsonl"
        try writeText(Trace.text(input: shrunk, result: result), to: destination)
        let faults = (shrunk.recordedFates ?? [:]).values.filter { $0.delaysMs.count != 1 }.count
        printLine("shrunk \(events) planned events to \(shrunk.plan.count) (and \(faults) network faults) in \(runs) runs; \(kind.label) still fires")
        for line in story { printLine(line) }
        printLine("written to \(destination); reproduce: swift run converge-sim replay \(destination) --story")
        return 1
    }
}
