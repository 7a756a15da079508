import Converge

/// What a run counts, reported as one JSON object (see ``json(simulation:)`` for the
/// members).
struct MetricsCollector {
    var sets = 0, removes = 0, reads = 0, explicitSyncs = 0
    var writesRefused = 0, operationsOnCrashedDevices = 0, syncsWhileOffline = 0
    var messagesSent = 0, bytesSent = 0, messagesLost = 0, messagesDuplicated = 0
    var messagesDroppedByFaults = 0, messagesDroppedByFullQueues = 0
    var propagationLatencies: [Int] = []
    var conflictsResolvedByWrites = 0, lostUpdates = 0, lostUpdatesLaterInTrueTime = 0
    var quotaCompensations = 0, quotaViolationNotices = 0, fullStateReplies = 0, upToDateAnswers = 0
    var partitions = 0, oneWayPartitions = 0, offlinePeriods = 0, longAbsences = 0, hubOutages = 0
    var crashes = 0, writesLostInCrashes = 0, accountSwitches = 0
    var lawChecks = 0, lostWrites = 0

    /// A local write replaced `superseded` while the app saw `shown`. With two or more
    /// live siblings, that resolved a conflict; each live sibling the policy hid is an
    /// update lost to the policy, and one written later (in true time) than the sibling
    /// shown was lost to clock skew.
    mutating func recordResolution(superseded: [Sibling], shown: Value?, ledger: WriteLedger, account: AccountID) {
        let live = superseded.filter { !$0.isTombstone }
        guard live.count > 1 else { return }
        conflictsResolvedByWrites += 1
        let shownValues: [Value]
        if case .array(let items)? = shown, !live.contains(where: { $0.value == shown }) { shownValues = items } else { shownValues = shown.map { [$0] } ?? [] }
        let shownTimes = live.filter { shownValues.contains($0.value!) }.compactMap { ledger.write($0.dot, account: account)?.timeMs }
        for sibling in live where !shownValues.contains(sibling.value!) {
            lostUpdates += 1
            if let time = ledger.write(sibling.dot, account: account)?.timeMs, let latestShown = shownTimes.max(), time > latestShown {
                lostUpdatesLaterInTrueTime += 1
            }
        }
    }

    func json(simulation: Simulation) -> JSON {
        let operations = sets + removes + reads + explicitSyncs
        let latencies = propagationLatencies.sorted()
        func quantile(_ q: Double) -> JSON {
            latencies.isEmpty ? .null : .int(Int64(latencies[min(latencies.count - 1, Int(Double(latencies.count) * q))]))
        }
        // Siblings and metadata, over the final states of every device.
        var keys = 0, siblings = 0, maxSiblings = 0, stateBytes = 0, payloadBytes = 0, tombstones = 0
        for device in simulation.devices {
            let state = device.store.replicatedState
            stateBytes += state.encoded().count
            for key in state.entries.keys {
                let list = state.siblings(forKey: key)
                keys += 1
                siblings += list.count
                maxSiblings = max(maxSiblings, list.count)
                payloadBytes += key.utf8.count + list.reduce(0) { $0 + $1.valueSizeBytes }
                tombstones += list.filter(\.isTombstone).count
            }
        }
        var collected = 0
        for account in simulation.hub.accountIDs { collected += simulation.hub.tombstonesCollected(in: account) }
        func ratio(_ a: Int, _ b: Int) -> JSON { b == 0 ? .null : .double(Double(a) / Double(b)) }
        return .object([
            ("operations", .object([
                ("set", .int(Int64(sets))), ("remove", .int(Int64(removes))), ("read", .int(Int64(reads))),
                ("synchronize", .int(Int64(explicitSyncs))), ("refusedByQuota", .int(Int64(writesRefused))),
                ("onCrashedDevices", .int(Int64(operationsOnCrashedDevices))),
            ])),
            ("convergence", .object([
                ("livenessMs", simulation.livenessMs.map { .int(Int64($0)) } ?? .null),
                ("propagationMs", .object([("p50", quantile(0.5)), ("p90", quantile(0.9)), ("p99", quantile(0.99)),
                                           ("max", latencies.last.map { .int(Int64($0)) } ?? .null)])),
                ("writesPropagated", .int(Int64(latencies.count))),
                ("virtualTimeMs", .int(Int64(simulation.now))),
            ])),
            ("network", .object([
                ("messages", .int(Int64(messagesSent))), ("bytes", .int(Int64(bytesSent))),
                ("messagesPerOperation", ratio(messagesSent, operations)), ("bytesPerOperation", ratio(bytesSent, operations)),
                ("lost", .int(Int64(messagesLost))), ("duplicated", .int(Int64(messagesDuplicated))),
                ("droppedByFaults", .int(Int64(messagesDroppedByFaults))), ("droppedByFullQueues", .int(Int64(messagesDroppedByFullQueues))),
                ("syncsWhileOffline", .int(Int64(syncsWhileOffline))), ("upToDateAnswers", .int(Int64(upToDateAnswers))),
            ])),
            ("policy", .object([
                ("name", .string(simulation.options.policy)),
                ("conflictsResolvedByWrites", .int(Int64(conflictsResolvedByWrites))),
                ("lostUpdates", .int(Int64(lostUpdates))),
                ("lostUpdatesLaterInTrueTime", .int(Int64(lostUpdatesLaterInTrueTime))),
            ])),
            ("state", .object([
                ("keys", .int(Int64(keys))), ("siblingsPerKey", ratio(siblings, keys)), ("maxSiblings", .int(Int64(maxSiblings))),
                ("metadataBytesPerKey", ratio(stateBytes - payloadBytes, keys)),
                ("tombstones", .int(Int64(tombstones))), ("tombstonesCollectedByHub", .int(Int64(collected))),
            ])),
            ("quota", .object([
                ("compensations", .int(Int64(quotaCompensations))), ("violationNotices", .int(Int64(quotaViolationNotices))),
            ])),
            ("faults", .object([
                ("partitions", .int(Int64(partitions))), ("oneWayPartitions", .int(Int64(oneWayPartitions))),
                ("offlinePeriods", .int(Int64(offlinePeriods))), ("absencesPastRetirement", .int(Int64(longAbsences))),
                ("hubOutages", .int(Int64(hubOutages))), ("crashes", .int(Int64(crashes))),
                ("writesLostInCrashes", .int(Int64(writesLostInCrashes))), ("accountSwitches", .int(Int64(accountSwitches))),
                ("fullStateReplies", .int(Int64(fullStateReplies))),
            ])),
            ("checks", .object([
                ("events", .int(Int64(simulation.eventsProcessed))), ("lawChecks", .int(Int64(lawChecks))),
                ("writesChecked", .int(Int64(simulation.ledger.writes.filter { $0.durable && !$0.forgotten }.count))),
                ("lostWrites", .int(Int64(lostWrites))),
            ])),
        ])
    }
}
