import ConvergeSimulation

/// How results are printed: one JSON object per run per line, or readable text.
enum Report {
    static func jsonLine(_ result: SimulationResult, reproduce: String?, policy: String? = nil) -> String {
        var members: [(String, JSON)] = [
            ("seed", .string(String(result.seed))), ("scenario", .string(result.options.scenarioName)),
        ]
        if let policy { members.append(("policy", .string(policy))) }
        members += [
            ("converged", .bool(result.converged)), ("violations", .array(result.violations.map(JSON.string))),
            ("metrics", result.metrics), ("digest", .string(result.digest)),
            ("options", result.options.json["options"]!),
            ("derived", .array(result.options.derived.map(JSON.string))),
        ]
        if let variant = result.variant { members.append(("variant", .string(variant.rawValue))) }
        if let reproduce, !result.passed { members.append(("reproduce", .string(reproduce))) }
        return JSON.object(members).serialized()
    }

    static func number(_ json: JSON?) -> String {
        guard let json, json != .null else { return "-" }
        if let i = json.intValue { return grouped(i) }
        return json.serialized()
    }

    static func grouped(_ value: Int64) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (index, character) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out += "," }
            out.append(character)
        }
        return (value < 0 ? "-" : "") + out
    }

    /// One run, readably: the derived options, what happened, the verdict.
    static func text(_ result: SimulationResult, reproduce: String, fullOptions: Bool) -> String {
        let m = result.metrics
        var lines: [String] = []
        lines.append("seed \(result.seed): \(result.passed ? "PASS" : "FAIL")  digest \(result.digest)")
        if fullOptions {
            lines.append("  options of scenario \"\(result.options.scenarioName)\":")
            lines += result.options.summaryLines.map { "  " + $0 }
        } else if !result.options.derived.isEmpty {
            let derived = result.options.derived.map { name in
                "\(name)=\(result.options.json["options"]![name]!.serialized())"
            }
            lines.append("  derived from the seed: " + derived.joined(separator: " "))
        }
        let ops = m["operations"]!, net = m["network"]!, conv = m["convergence"]!, policy = m["policy"]!
        let state = m["state"]!, faults = m["faults"]!, quota = m["quota"]!
        lines.append("  workload: \(number(ops["set"])) sets, \(number(ops["remove"])) removes, \(number(ops["read"])) reads, \(number(ops["synchronize"])) explicit syncs; \(number(ops["refusedByQuota"])) refused by the quota")
        lines.append("  network: \(number(net["messages"])) messages, \(number(net["bytes"])) bytes; \(number(net["lost"])) lost, \(number(net["duplicated"])) duplicated, \(number(net["droppedByFaults"])) dropped by partitions and outages")
        lines.append("  faults: \(number(faults["partitions"])) partitions, \(number(faults["oneWayPartitions"])) one-way, \(number(faults["offlinePeriods"])) offline periods, \(number(faults["hubOutages"])) hub outages, \(number(faults["crashes"])) crashes (\(number(faults["writesLostInCrashes"])) unflushed writes lost), \(number(faults["accountSwitches"])) account switches, \(number(faults["fullStateReplies"])) full-state replies")
        let propagation = conv["propagationMs"]!
        lines.append("  convergence: \(conv["livenessMs"] == .null ? "NOT converged" : "converged \(number(conv["livenessMs"])) ms after healing"); a write reached every device in p50 \(number(propagation["p50"])) ms, p99 \(number(propagation["p99"])) ms")
        lines.append("  policy \(policy["name"]!.stringValue!): \(number(policy["conflictsResolvedByWrites"])) conflicts resolved by writes, \(number(policy["lostUpdates"])) updates hidden by the policy then overwritten (\(number(policy["lostUpdatesLaterInTrueTime"])) of them the later write in true time, the mark of clock skew under lww)")
        lines.append("  state: \(number(state["keys"])) key copies, \(number(state["siblingsPerKey"])) siblings per key, \(number(state["metadataBytesPerKey"])) metadata bytes per key; \(number(state["tombstonesCollectedByHub"])) tombstones collected; \(number(quota["compensations"])) quota compensations")
        for violation in result.violations { lines.append("  VIOLATION \(violation)") }
        if !result.passed { lines.append("  reproduce: \(reproduce)") }
        return lines.joined(separator: "\n")
    }
}
