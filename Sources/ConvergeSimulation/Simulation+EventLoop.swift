/// The event loop: events run in `(virtual time, insertion order)` order on one thread, and
/// after every step the invariant checks run.
extension Simulation {
    /// What can happen at a moment of virtual time.
    enum Event {
        /// The plan's event at this index (an operation or a fault).
        case planned(Int)
        case deliver(message: Int)
        case periodicSync(device: Int)
        case flush(device: Int)
        case restart(device: Int)
        case partitionEnd(id: Int)
        case offlineEnd(device: Int, id: Int)
        case hubOutageEnd(id: Int)
        case hubRestart(outage: Int)
        case diskFullEnd(device: Int)
        case accountBack(device: Int)
        case heal
        case livenessCheck
    }

    /// Runs both phases and every checker.
    public func run() -> SimulationResult {
        for (index, timed) in input.plan.enumerated() { queue.schedule(.planned(index), at: timed.timeMs) }
        let end = input.plan.last?.timeMs ?? 0
        for index in devices.indices {
            queue.schedule(.periodicSync(device: index),
                           at: 1 + index * options.syncIntervalMs / max(devices.count, 1) + hooks.syncJitterMs())
        }
        // A quiet tail keeps the faults and the loss on for a while with only syncs: what
        // must still converge when the network settles is not only what was in flight.
        queue.schedule(.heal, at: end + 1 + options.quietTailMs)
        while !finished, let (time, event) = queue.pop() {
            now = time
            step(event)
        }
        if livenessMs == nil && !finished {
            violations.append(Violation(.liveness, "the run ended before the replicas converged"))
        }
        checkAfterConvergence()
        return finish()
    }

    /// One step: the event, then the checks that run after every step.
    func step(_ event: Event) {
        handle(event)
        forgetWritesLostWithRestoredDisks()
        if timeline != nil {
            for node in Set(changedThisStep).sorted(by: { SimulatedNetwork.lane($0) < SimulatedNetwork.lane($1) }) { recordConflicts(on: node) }
        }
        eventsProcessed += 1
        checkInvariantsAfterStep()
        if eventsProcessed % 256 == 0 { checkLawsOnSampledStates() }
        if eventsProcessed % 256 == 128 { checkSampledReplicaAgainstModel() }
        if timeline != nil && timeline!.firstViolationMs == nil && !violations.isEmpty { timeline!.firstViolationMs = now }
    }

    /// Records a ``SimulationTimeline`` while the run goes on (for pictures); call it
    /// before ``run()``. It does not change the run.
    package func recordTimeline() {
        timeline = SimulationTimeline()
    }

    func handle(_ event: Event) {
        switch event {
        case .planned(let index):
            digest.update(index)
            let finishRecording = recordPlanned(input.plan[index].event)
            perform(input.plan[index].event)
            finishRecording?()
        case .deliver(let id):
            let receiver = timeline == nil ? nil : network.receiver(of: id)
            let before = receiver.map(stateSignature)
            deliver(id)
            if let receiver, let before { recordWhetherArrivalChanged(id, before != stateSignature(of: receiver)) }
        case .periodicSync(let d):
            synchronize(d)
            queue.schedule(.periodicSync(device: d), at: now + options.syncIntervalMs + hooks.syncJitterMs())
        case .flush(let d):
            devices[d].flushScheduled = false
            flush(d)
        case .restart(let d):
            restart(d)
        case .partitionEnd(let id):
            network.endPartition(id)
        case .offlineEnd(let d, let id):
            network.endOffline(id, device: d)
        case .hubOutageEnd(let id):
            network.endHubOutage(id)
        case .hubRestart(let outage):
            restartHub(outage: outage)
        case .diskFullEnd(let d):
            devices[d].disk.isFull = false
        case .accountBack(let d):
            guard devices[d].store.account != .default else { break }
            // A device that is down, or whose full disk would refuse the switch, switches
            // back once it can: skipping it would leave the device in the second account for
            // good. The heal restarts every device and empties every disk.
            guard !devices[d].crashed, !devices[d].disk.isFull else {
                queue.schedule(.accountBack(device: d), at: now + options.syncIntervalMs)
                break
            }
            recordMoment("\(devices[d].id) switches back to the default account")
            switchAccount(d, to: .default)
        case .heal:
            heal()
        case .livenessCheck:
            if let difference = convergenceDifference() {
                if now - healTime > options.livenessBoundMs {
                    violations.append(Violation(.liveness, "not converged \(options.livenessBoundMs) ms after healing: \(difference)"))
                    finished = true
                } else {
                    queue.schedule(.livenessCheck, at: now + options.syncIntervalMs)
                }
            } else {
                livenessMs = now - healTime
                finished = true
            }
        }
    }

    /// A planned event: an operation of the workload or a fault.
    func perform(_ event: PlannedEvent) {
        switch event {
        case .set, .remove, .synchronize, .read:
            performOperation(event)
        case .partition, .offline, .hubOutage, .hubCrash, .hubBackup, .hubRestore, .crash, .switchAccount, .clock, .clockJump, .diskFull,
             .deviceBackup, .deviceRestore, .deviceClone:
            inject(event)
        }
    }

    /// The result, once both phases and the final checks are done: the digest covers every
    /// replica's final state, the metrics and the violations.
    func finish() -> SimulationResult {
        let converged = livenessMs != nil
        for (index, repeats) in repeatedViolations { violations[index].message += " (and \(repeats) more time\(repeats == 1 ? "" : "s") after)" }
        for device in devices { digest.update(device.store.replicatedState.encoded()) }
        for account in hub.accountIDs { digest.update(hub.state(of: account).encoded()) }
        let report = metrics.report(simulation: self)
        digest.update(JSONCoding.bytes(of: report))
        for violation in violations { digest.update(violation.description) }
        recordHoldings()
        if timeline != nil {
            timeline!.healedMs = network.healed ? healTime : nil
            timeline!.endMs = now
            if timeline!.firstViolationMs == nil && !violations.isEmpty { timeline!.firstViolationMs = now }
        }
        return SimulationResult(seed: input.seed, options: options, variant: input.variant, converged: converged,
                                violations: violations, metrics: report, digest: digest.hex, fates: network.usedFates,
                                timeline: timeline)
    }
}
