/// A run told as a short story, for a shrunk failure: who wrote what (with the dot each
/// write got), which messages the network lost, duplicated or held back and when the
/// others arrived, what each replica held at the end, and what failed.
///
/// Routine messages (delivered once, changing nothing at their receiver) are counted, not
/// told.
/// The story needs the run's ``SimulationTimeline`` (``Simulation/recordTimeline()``).
package enum RunStory {
    /// Runs `input` once, recording its timeline, and tells its story.
    package static func tell(_ input: SimulationInput, maximumLines: Int = 120, everyMessage: Bool = false)
        -> (result: SimulationResult, lines: [String]) {
        let simulation = Simulation(input)
        simulation.recordTimeline()
        let result = simulation.run()
        return (result, lines(input: input, result: result, maximumLines: maximumLines, everyMessage: everyMessage))
    }

    /// The story of the run of `input` that gave `result`, at most `maximumLines` lines of
    /// events (the end state and the violations are always told); with `everyMessage`,
    /// routine messages are told too.
    package static func lines(input: SimulationInput, result: SimulationResult, maximumLines: Int = 120, everyMessage: Bool = false) -> [String] {
        guard let timeline = result.timeline else { return ["(the run recorded no timeline: no story to tell)"] }
        let options = result.options
        var events: [String] = []
        var routine = 0
        var refusals: [String: Int] = [:]
        func tell(_ atMs: Int, _ text: String) {
            if routine > 0 {
                events.append("\(pad("")) (\(routine) message\(routine == 1 ? "" : "s") that changed nothing\(refused(refusals)))")
                routine = 0
                refusals = [:]
            }
            events.append("\(pad(String(atMs))) \(text)")
        }
        var nextMoment = 0
        for message in timeline.messages {
            while nextMoment < message.momentsBefore {
                tell(timeline.moments[nextMoment].atMs, timeline.moments[nextMoment].text)
                nextMoment += 1
            }
            if !everyMessage && isRoutine(message) {
                routine += 1
                if let refusal = message.arrivals[0].refusal { refusals[refusal, default: 0] += 1 }
            } else {
                tell(message.sentMs, describe(message))
            }
        }
        for moment in timeline.moments[nextMoment...] { tell(moment.atMs, moment.text) }
        if routine > 0 { tell(timeline.endMs, "the run ends") }
        var lines = ["What happened (seed \(result.seed), \(options.topology.rawValue) topology, \(options.policy.rawValue); times in ms):"]
        if events.count > maximumLines {
            lines += events.prefix(maximumLines)
            lines.append("\(pad("")) … \(events.count - maximumLines) more lines (`replay --story --every-message` tells them all; `converge-sim view` draws the whole run)")
        } else {
            lines += events
        }
        lines.append("At the end:")
        for lane in timeline.holdings.keys.sorted() {
            let held = timeline.holdings[lane] ?? []
            lines.append("  \(lane): " + (held.isEmpty ? "nothing" : held.joined(separator: "; ")))
        }
        if result.violations.isEmpty {
            lines.append("Every checker passed.")
        } else {
            lines.append("What failed:")
            for violation in result.violations { lines.append("  \(violation)") }
        }
        return lines
    }

    /// How many of a run of routine messages their receivers refused, and why: "; 12 refused
    /// (10 reused counters, 2 stale report)", or nothing.
    private static func refused(_ refusals: [String: Int]) -> String {
        guard !refusals.isEmpty else { return "" }
        let total = refusals.values.reduce(0, +)
        let reasons = refusals.keys.sortedByUTF8().map { "\(refusals[$0]!) \($0)" }
        return "; \(total) refused (\(reasons.joined(separator: ", ")))"
    }

    /// A message that arrived once and changed nothing (a poll, an up-to-date answer, an
    /// empty push): the background of a run.
    private static func isRoutine(_ message: SimulationTimeline.Message) -> Bool {
        // A file changes its reader only when the reader next syncs: every file is told.
        message.kind != "file" && message.fate == .sent && message.arrivals.count == 1 && message.arrivals[0].delivered && !message.arrivals[0].changedReceiver
    }

    /// One message in words: `d0 → hub push #2 (310 bytes): lost`.
    private static func describe(_ message: SimulationTimeline.Message) -> String {
        let head = "\(message.from) → \(message.to) \(message.kind) #\(message.link.number) (\(message.bytes) bytes"
            + (message.carries.map { ": \($0)" } ?? "") + ")"
        switch message.fate {
        case .lost: return head + ": lost"
        case .droppedByFault: return head + ": not sent, the link is cut"
        case .droppedByFullQueue: return head + ": dropped, \(message.to)'s queue is full"
        case .sent:
            let arrivals = message.arrivals.map {
                if !$0.delivered { return "reaches a cut link at \($0.atMs)" }
                if message.kind == "file" { return "arrives at \($0.atMs) (read at the reader's next sync)" }
                if let refusal = $0.refusal { return "arrives at \($0.atMs), refused (\(refusal))" }
                return "arrives at \($0.atMs)\($0.changedReceiver ? "" : ", changes nothing")"
            }
            let copies = message.copies > 1 ? " (duplicated)" : ""
            if arrivals.isEmpty { return head + copies + ": still in flight at the end" }
            return head + copies + ": " + arrivals.joined(separator: ", again ")
        }
    }

    private static func pad(_ text: String) -> String {
        String(repeating: " ", count: max(0, 7 - text.count)) + text
    }
}
