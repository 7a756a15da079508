import Converge

/// What a run counts as it goes; ``report(simulation:)`` turns it into
/// ``SimulationMetrics``.
struct MetricsCollector {
    var sets = 0, removes = 0, reads = 0, explicitSyncs = 0
    var writesRefused = 0, operationsOnCrashedDevices = 0, syncsWhileOffline = 0
    var messagesSent = 0, bytesSent = 0, messagesLost = 0, messagesDuplicated = 0
    var messagesDroppedByFaults = 0, messagesDroppedByFullQueues = 0
    var propagationLatencies: [Int] = []
    var conflictsResolvedByWrites = 0, lostUpdates = 0, lostUpdatesLaterInTrueTime = 0, valueRemoveConflicts = 0
    var quotaCompensations = 0, quotaViolationNotices = 0, fullStateReplies = 0, upToDateAnswers = 0
    var partitions = 0, oneWayPartitions = 0, offlinePeriods = 0, longAbsences = 0, hubOutages = 0, hubCrashes = 0, hubRestores = 0, clockJumps = 0, diskFullPeriods = 0, refusedOnFullDisk = 0
    var damagedCopies = 0, damagedMessagesRefused = 0, damagedFilesSkipped = 0
    var crashes = 0, writesLostInCrashes = 0, accountSwitches = 0
    var deviceRestores = 0, writesLostInRestores = 0, deviceIncarnations = 0, adoptedWrites = 0, deviceClones = 0
    var lawChecks = 0, lostWrites = 0

    /// A local write replaced `superseded` while the app saw `shown`. With two or more
    /// live siblings, that resolved a conflict; each live sibling the policy hid is an
    /// update lost to the policy, and one written later (in true time) than the sibling
    /// shown was lost to clock skew.
    mutating func recordResolution(superseded: [Sibling], shown: Value?, ledger: WriteLedger, account: AccountID) {
        let live = superseded.filter { !$0.isTombstone }
        if !live.isEmpty && live.count < superseded.count { valueRemoveConflicts += 1 }
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

    func report(simulation: Simulation) -> SimulationMetrics {
        var metrics = SimulationMetrics(policy: simulation.options.policy)
        if let custom = simulation.input.customPolicy { metrics.policy.name = custom.name }
        let operations = sets + removes + reads + explicitSyncs
        func ratio(_ a: Int, _ b: Int) -> Double? { b == 0 ? nil : Double(a) / Double(b) }
        metrics.operations = .init(set: sets, remove: removes, read: reads, synchronize: explicitSyncs,
                                   refusedByQuota: writesRefused, onCrashedDevices: operationsOnCrashedDevices)
        metrics.convergence = .init(livenessMs: simulation.livenessMs, propagationMs: .init(of: propagationLatencies),
                                    writesPropagated: propagationLatencies.count, virtualTimeMs: simulation.now)
        metrics.network = .init(messages: messagesSent, bytes: bytesSent,
                                messagesPerOperation: ratio(messagesSent, operations), bytesPerOperation: ratio(bytesSent, operations),
                                lost: messagesLost, duplicated: messagesDuplicated, droppedByFaults: messagesDroppedByFaults,
                                droppedByFullQueues: messagesDroppedByFullQueues, syncsWhileOffline: syncsWhileOffline,
                                upToDateAnswers: upToDateAnswers)
        metrics.policy.conflictsResolvedByWrites = conflictsResolvedByWrites
        metrics.policy.lostUpdates = lostUpdates
        metrics.policy.lostUpdatesLaterInTrueTime = lostUpdatesLaterInTrueTime
        metrics.policy.valueRemoveConflicts = valueRemoveConflicts
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
        metrics.state = .init(keys: keys, siblingsPerKey: ratio(siblings, keys), maxSiblings: maxSiblings,
                              metadataBytesPerKey: ratio(stateBytes - payloadBytes, keys), tombstones: tombstones,
                              tombstonesCollectedByHub: collected)
        metrics.quota = .init(compensations: quotaCompensations, violationNotices: quotaViolationNotices)
        metrics.faults = .init(partitions: partitions, oneWayPartitions: oneWayPartitions, offlinePeriods: offlinePeriods,
                               absencesPastRetirement: longAbsences, hubOutages: hubOutages, hubCrashes: hubCrashes, hubRestores: hubRestores, clockJumps: clockJumps, diskFullPeriods: diskFullPeriods,
                               refusedOnFullDisk: refusedOnFullDisk, damagedCopies: damagedCopies,
                               damagedMessagesRefused: damagedMessagesRefused, damagedFilesSkipped: damagedFilesSkipped, crashes: crashes,
                               writesLostInCrashes: writesLostInCrashes, accountSwitches: accountSwitches,
                               fullStateReplies: fullStateReplies, deviceRestores: deviceRestores,
                               writesLostInRestores: writesLostInRestores, deviceIncarnations: deviceIncarnations,
                               adoptedWrites: adoptedWrites, deviceClones: deviceClones)
        metrics.checks = .init(events: simulation.eventsProcessed, lawChecks: lawChecks,
                               writesChecked: simulation.ledger.writes.filter { $0.durable && !$0.forgotten }.count,
                               lostWrites: lostWrites)
        return metrics
    }
}
