import ConvergeSimulation

/// How results are printed: one JSON object per run per line, or readable text.
enum Report {
    /// The JSON of one run (`--json`): at least `seed`, `converged`, `violations`,
    /// `metrics` and `digest`, then the options.
    struct Line: Encodable {
        var seed: String
        var scenario: String
        var policy: String?
        var converged: Bool
        var violations: [Violation]
        var metrics: SimulationMetrics
        var digest: String
        var options: OptionValues
        var derived: [String]
        var variant: String?
        /// The command that reproduces a failed run.
        var reproduce: String?
    }

    static func jsonLine(_ result: SimulationResult, reproduce: String?, policy: String? = nil) -> String {
        JSONCoding.encoded(Line(
            seed: String(result.seed), scenario: result.options.scenarioName, policy: policy, converged: result.converged,
            violations: result.violations, metrics: result.metrics, digest: result.digest, options: OptionValues(result.options),
            derived: result.options.derived, variant: result.variant?.rawValue, reproduce: result.passed ? nil : reproduce
        ))
    }

    static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (index, character) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out += "," }
            out.append(character)
        }
        return (value < 0 ? "-" : "") + out
    }

    static func number(_ value: Int?) -> String { value.map(grouped) ?? "-" }

    /// A decimal for people: grouped if whole, else at most six decimals.
    static func decimal(_ value: Double) -> String {
        guard value.isFinite else { return String(value) }
        let micro = (value * 1_000_000).rounded()
        guard abs(micro) < 9e15 else { return String(value) }
        let scaled = Int64(micro)
        if scaled % 1_000_000 == 0 { return grouped(Int(scaled / 1_000_000)) }
        var fraction = String(scaled.magnitude % 1_000_000)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return (scaled < 0 ? "-" : "") + grouped(Int(scaled.magnitude / 1_000_000)) + "." + fraction
    }

    static func number(_ value: Double?) -> String { value.map(decimal) ?? "-" }

    /// `value` and the noun, singular for exactly one: "1 crash", "2 crashes".
    static func count(_ value: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(number(value)) \(value == 1 ? singular : plural ?? singular + "s")"
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
            let derived = SimulationOptionTable.specs.filter { result.options.derived.contains($0.name) }.map { spec in
                "\(spec.name)=\(spec.value(in: result.options))"
            }
            lines.append("  derived from the seed: " + derived.joined(separator: " "))
        }
        let ops = m.operations, net = m.network, conv = m.convergence, policy = m.policy
        let state = m.state, faults = m.faults, quota = m.quota
        lines.append("  workload: \(count(ops.set, "set")), \(count(ops.remove, "remove")), \(count(ops.read, "read")), \(count(ops.synchronize, "explicit sync")); \(number(ops.refusedByQuota)) refused by the quota")
        lines.append("  network: \(count(net.messages, "message")), \(count(net.bytes, "byte")); \(number(net.lost)) lost, \(number(net.duplicated)) duplicated, \(number(net.droppedByFaults)) dropped by partitions and outages")
        lines.append("  faults: \(count(faults.partitions, "partition")), \(number(faults.oneWayPartitions)) one-way, \(count(faults.offlinePeriods, "offline period")) (\(number(faults.absencesPastRetirement)) past the retirement interval: returns included), \(count(faults.hubOutages, "hub outage")), \(count(faults.hubCrashes, "hub crash", "hub crashes")), \(count(faults.hubRestores, "hub restore")), \(count(faults.clockJumps, "clock jump")), \(count(faults.diskFullPeriods, "disk-full period")) (\(count(faults.refusedOnFullDisk, "operation")) refused), \(count(faults.damagedCopies, "damaged copy", "damaged copies")) (\(count(faults.damagedMessagesRefused, "message")) refused, \(count(faults.damagedFilesSkipped, "file read")) skipped), \(count(faults.crashes, "crash", "crashes")) (\(count(faults.writesLostInCrashes, "unflushed write")) lost), \(count(faults.deviceRestores, "device restore")) (\(count(faults.writesLostInRestores, "unacknowledged write")) lost, \(count(faults.deviceIncarnations, "new incarnation")) started, \(count(faults.adoptedWrites, "orphaned write")) adopted), \(count(faults.deviceClones, "device clone")), \(count(faults.accountSwitches, "account switch", "account switches")), \(count(faults.fullStateReplies, "full-state reply", "full-state replies"))")
        let converged = conv.livenessMs.map { "converged \(number($0)) ms after healing" } ?? "NOT converged"
        lines.append("  convergence: \(converged); a write reached every device in p50 \(number(conv.propagationMs.p50)) ms, p99 \(number(conv.propagationMs.p99)) ms")
        lines.append("  policy \(policy.name): \(number(policy.conflictsResolvedByWrites)) conflicts resolved by writes, \(number(policy.lostUpdates)) updates hidden by the policy then overwritten (\(number(policy.lostUpdatesLaterInTrueTime)) of them the later write in true time, the mark of clock skew under lww)")
        lines.append("  state: \(number(state.keys)) key copies, \(number(state.siblingsPerKey)) siblings per key, \(number(state.metadataBytesPerKey)) metadata bytes per key; \(number(state.tombstonesCollectedByHub)) tombstones collected; \(number(quota.compensations)) quota compensations")
        for violation in result.violations { lines.append("  VIOLATION \(violation)") }
        if !result.passed { lines.append("  reproduce: \(reproduce)") }
        return lines.joined(separator: "\n")
    }
}
