import Converge

/// The faults the plan injects (partitions, offline periods, hub outages, crashes, account
/// switches, clock settings, device restores from a backup and disks cloned onto another
/// device), their ends, and healing them all for the liveness phase.
extension Simulation {
    /// One fault of the plan.
    func inject(_ fault: PlannedEvent) {
        switch fault {
        case .partition(let group, let oneWay, let duration):
            let id = network.startPartition(of: group, oneWay: oneWay)
            if oneWay { metrics.oneWayPartitions += 1 } else { metrics.partitions += 1 }
            queue.schedule(.partitionEnd(id: id), at: now + duration)
        case .offline(let d, let duration):
            let id = network.startOffline(device: d)
            metrics.offlinePeriods += 1
            if duration > options.retirementMs { metrics.longAbsences += 1 }
            queue.schedule(.offlineEnd(device: d, id: id), at: now + duration)
        case .hubOutage(let duration):
            let id = network.startHubOutage()
            metrics.hubOutages += 1
            queue.schedule(.hubOutageEnd(id: id), at: now + duration)
        case .hubCrash(let down):
            crashHub(downMs: down)
        case .hubBackup:
            // The durable state is copied: while the hub is down, what it will restart from.
            hubBackup = hubDurableState ?? hub.accountIDs.map { ($0, hub.encodedState(of: $0) ?? []) }
            model.backedUpHub()
        case .hubRestore(let down):
            restoreHubFromBackup(downMs: down)
        case .crash(let d, let down):
            guard !devices[d].crashed else { return }
            crash(d)
            queue.schedule(.restart(device: d), at: now + down)
        case .switchAccount(let d, let duration):
            guard !devices[d].crashed, devices[d].store.account == .default else { return }
            switchAccount(d, to: Self.secondAccount)
            queue.schedule(.accountBack(device: d), at: now + duration)
        case .clock(let d, let offset, let drift):
            devices[d].clockOffsetMs = offset
            devices[d].clockDriftPpm = drift
        case .diskFull(let d, let duration):
            guard !devices[d].disk.isFull else { return }
            metrics.diskFullPeriods += 1
            devices[d].disk.isFull = true
            queue.schedule(.diskFullEnd(device: d), at: now + duration)
        case .clockJump(let d, let by):
            metrics.clockJumps += 1
            devices[d].clockOffsetMs += by
        case .deviceBackup(let d):
            // What the disk has made durable is copied, as a backup of a running phone would.
            deviceBackups[d] = (devices[d].disk.snapshot(), devices[d].replicaID)
            devices[d].replacedSinceBackup.removeAll()
            model.backedUpDevice(d)
        case .deviceRestore(let d, let down):
            restoreDeviceFromBackup(d, downMs: down)
        case .deviceClone(let from, let to, let down):
            cloneDevice(from: from, to: to, downMs: down)
        case .set, .remove, .synchronize, .read:
            preconditionFailure("not a fault: \(fault)")
        }
    }

    /// A power cut: what the disk has not made durable is lost, and so are the writes it
    /// held (never acknowledged; their dots will be reused).
    func crash(_ d: Int) {
        metrics.crashes += 1
        devices[d].crashed = true
        devices[d].disk.crash()
        model.crashed(device: d)
        for index in devices[d].unflushedWrites {
            metrics.writesLostInCrashes += 1
            ledger.forget(index)
            model.forget(ledgerIndex: index)
        }
        devices[d].unflushedWrites.removeAll()
        devices[d].replacedOnFlush.removeAll()
    }

    /// Device `d` powers off and its disk is replaced by its last backup (an empty disk
    /// without one); it restarts from it after `downMs` (or when the crash it is in ends).
    ///
    /// Its writes the backup does not hold are gone with the disk. Those no other replica
    /// knows were never acknowledged: the ledger and the model forget them (their dots will
    /// be reused), as a crash forgets unflushed writes; those only a message still in flight
    /// carries are forgotten if none of its copies is taken (messages keep travelling).
    /// Those another replica knows still count: the restored store must find its counters
    /// reused (a new incarnation) and recover them, and the checkers hold the run to them.
    func restoreDeviceFromBackup(_ d: Int, downMs: Int) {
        metrics.deviceRestores += 1
        let wasDown = devices[d].crashed
        devices[d].crashed = true
        // The writes a later incarnation replaced are on the backup as they were: they count
        // again (and their dots name two writes again, until the device finds it out anew).
        if deviceBackups[d] != nil {
            for write in devices[d].replacedSinceBackup {
                if let index = model.revive(write: write) { ledger.revive(index) }
            }
            // So do those lost with the disk since (a clone over it, a restore of another
            // backup): the backup holds them.
            for index in model.revivedFromBackup(of: d) { ledger.revive(index) }
        }
        devices[d].replacedSinceBackup.removeAll()
        let own = ledger.writes.indices.filter { ledger.writes[$0].device == d && !ledger.writes[$0].forgotten }
            .map { (ledgerIndex: $0, account: ledger.writes[$0].account, id: Self.modelID(ledger.writes[$0].dot)) }
        let lost = model.restoredDevice(d, ownWrites: own)
        for index in lost { ledger.forget(index) }
        metrics.writesLostInRestores += lost.count
        devices[d].unflushedWrites.removeAll()
        devices[d].replacedOnFlush.removeAll()
        let backup = deviceBackups[d]
        devices[d].disk.restore(backup?.state)
        if let backup { devices[d].replicaID = backup.replicaID }
        // Its connections die with the power: a reply computed for what it held before would
        // claim writes it no longer holds. (In the folder topology the file-sync service
        // carries files, not connections: they still arrive.)
        if options.topology != .folder {
            network.cutMessages(to: .device(d))
            network.orphanMessages(from: .device(d))
        }
        recordMoment("\(devices[d].id) powers off; its disk is replaced by \(backup == nil ? "an empty one (no backup was taken)" : "its last backup"), losing \(lost.count) write\(lost.count == 1 ? "" : "s") nobody else knew")
        changed(.device(d))
        if !wasDown { queue.schedule(.restart(device: d), at: now + downMs) }
    }

    /// Device `to` powers off; its disk is replaced by a copy of what device `from`'s disk has
    /// made durable, and it restarts after `downMs` (or when the crash it is in ends) under
    /// `from`'s replica ID: two devices then write under one ID, as after restoring one
    /// phone's backup onto a second phone.
    ///
    /// The target's own disk is wiped: its writes that no other replica or message in flight
    /// knows are lost (forgotten, as in a restore); the others count. What the copy holds,
    /// it knows from then on.
    func cloneDevice(from s: Int, to t: Int, downMs: Int) {
        guard s != t else { return }
        metrics.deviceClones += 1
        let wasDown = devices[t].crashed
        devices[t].crashed = true
        let own = ledger.writes.indices.filter { ledger.writes[$0].device == t && !ledger.writes[$0].forgotten }
            .map { (ledgerIndex: $0, account: ledger.writes[$0].account, id: Self.modelID(ledger.writes[$0].dot)) }
        let lost = model.clonedDevice(t, from: s, ownWrites: own)
        for index in lost { ledger.forget(index) }
        metrics.writesLostInRestores += lost.count
        devices[t].unflushedWrites.removeAll()
        devices[t].replacedOnFlush.removeAll()
        devices[t].replacedSinceBackup.removeAll()
        devices[t].disk.restore(devices[s].disk.snapshot())
        devices[t].replicaID = devices[s].replicaID
        // A new incarnation of the source not yet on its disk: the copy holds the writes it
        // replaced under their old dots, so they still count when the source's flush makes
        // it durable (the clone re-stamps them in turn once it finds out).
        devices[s].replacedOnFlush.removeAll()
        if options.topology != .folder {
            network.cutMessages(to: .device(t))
            network.orphanMessages(from: .device(t))
        }
        recordMoment("\(devices[t].id) powers off; its disk is replaced by a copy of \(devices[s].id)'s, under replica ID \(devices[s].replicaID), losing \(lost.count) write\(lost.count == 1 ? "" : "s") nobody else knew")
        changed(.device(t))
        if !wasDown { queue.schedule(.restart(device: t), at: now + downMs) }
    }

    /// Writes of restored devices the model forgot when the last message carrying them was
    /// gone untaken: the ledger forgets them too.
    func forgetWritesLostWithRestoredDisks() {
        for index in model.takeNewlyForgotten() {
            ledger.forget(index)
            metrics.writesLostInRestores += 1
        }
    }

    /// The hub crashes: it is unreachable, and what it held only in memory is gone. Every
    /// exchange commits before the hub answers (as `converge-hub` does), so its durable state
    /// is its state after the last exchange: that is what it restarts from.
    func crashHub(downMs: Int) {
        guard hubDurableState == nil else { return }
        metrics.hubCrashes += 1
        hubDurableState = hub.accountIDs.map { ($0, hub.encodedState(of: $0) ?? []) }
        let outage = network.startHubOutage()
        queue.schedule(.hubRestart(outage: outage), at: now + downMs)
    }

    /// The hub loses its durable state: it is unreachable, and restarts after `downMs` from
    /// the last backup (from nothing if none was taken). Devices that find it holding less
    /// than they know repair it; the model forgets what the hub learnt since the backup.
    func restoreHubFromBackup(downMs: Int) {
        // A crash in progress restarts from the backup too: the durable state is gone.
        let outage: Int? = hubDurableState == nil ? network.startHubOutage() : nil
        metrics.hubRestores += 1
        hubDurableState = hubBackup ?? []
        model.restoredHubFromBackup()
        if let outage { queue.schedule(.hubRestart(outage: outage), at: now + downMs) }
    }

    /// The hub restarts: a new hub reads every account back from its durable state, and the
    /// crash's `outage` ends (none to end at the heal, which ended every outage).
    func restartHub(outage: Int?) {
        guard let durable = hubDurableState else { return }
        hubDurableState = nil
        recordMoment(hooks.hubRestartsEmpty ? "the hub restarts from nothing (the broken variant forgets its durable state)"
                     : "the hub restarts from its durable state")
        var restarted = Self.makeHub(options: options, hooks: hooks, policy: input.customPolicy)
        // A restarted hub writes under incarnations no earlier one used.
        restarted.writerIncarnation = UInt64(metrics.hubCrashes + metrics.hubRestores) * 1_000_000 + 1
        for (account, bytes) in durable where !hooks.hubRestartsEmpty {
            do { try restarted.restoreState(bytes, of: account) } catch {
                violations.append(Violation(.storage, "the hub could not restart from its durable state of \(account): \(error)"))
            }
        }
        hub = restarted
        changed(.hub)
        if let outage { network.endHubOutage(outage) }
    }

    func restart(_ d: Int) {
        guard devices[d].crashed else { return }
        recordMoment("\(devices[d].id) restarts from its disk")
        changed(.device(d))
        setClock(d)
        do {
            try devices[d].reopen()
        } catch {
            violations.append(Violation(.storage, "\(devices[d].id) could not reopen its disk after a crash: \(error)"))
        }
        devices[d].crashed = false
        devices[d].flushScheduled = false
    }

    func switchAccount(_ d: Int, to account: AccountID) {
        let store = devices[d].store
        changed(.device(d))
        do {
            try store.switchAccount(to: account)
        } catch {
            if !refusedOnFullDisk(d, error) { violations.append(Violation(.storage, "\(devices[d].id) could not switch account: \(error)")) }
            return
        }
        metrics.accountSwitches += 1
        scheduleFlush(d)
        checkNoLeak(devices[d].store.replicatedState, account: account, at: "\(devices[d].id) after switching to \(account)")
    }

    /// The end of the safety phase: every fault healed, every device up and back in the
    /// default account; the liveness checks start.
    ///
    /// An account switch is a fault as the others are: a device still in the second
    /// account switches back, so that all replicas can converge. It may hold writes of the
    /// default account that only it can bring (a restored hub believes its claims only once
    /// it has had a full state, which a device that left before the reply never gets).
    func heal() {
        recordMoment("the network heals: every fault ends")
        network.heal()
        // The file-sync service catches up: every file still in the folder is everywhere.
        if options.topology == .folder { folder.deliverEverything(to: devices.indices) }
        healTime = now
        for d in devices.indices where devices[d].crashed { restart(d) }
        for d in devices.indices { devices[d].disk.isFull = false }
        if hubDurableState != nil { restartHub(outage: nil) }
        for d in devices.indices where devices[d].store.account != .default {
            recordMoment("\(devices[d].id) switches back to the default account")
            switchAccount(d, to: .default)
        }
        queue.schedule(.livenessCheck, at: now + options.syncIntervalMs)
    }
}
