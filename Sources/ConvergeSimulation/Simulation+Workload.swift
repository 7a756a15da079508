import Converge

/// The workload: what the app does on a device (set, remove, read, synchronize), and the
/// bookkeeping every local write takes (the write ledger, the disk's flush).
extension Simulation {
    /// One operation of the plan's workload.
    func performOperation(_ operation: PlannedEvent) {
        switch operation {
        case .set(let d, let key, let bytes):
            guard !devices[d].crashed else { metrics.operationsOnCrashedDevices += 1; return }
            metrics.sets += 1
            write(.string(valueText(on: d, bytes: bytes)), forKey: keyName(key), on: d)
        case .remove(let d, let key):
            guard !devices[d].crashed else { metrics.operationsOnCrashedDevices += 1; return }
            metrics.removes += 1
            write(nil, forKey: keyName(key), on: d)
        case .synchronize(let d):
            metrics.explicitSyncs += 1
            synchronize(d)
        case .read(let d, let key):
            guard !devices[d].crashed else { metrics.operationsOnCrashedDevices += 1; return }
            metrics.reads += 1
            if let value = devices[d].store.value(forKey: keyName(key)) { digest.update(value.encoded()) }
        case .partition, .offline, .hubOutage, .hubCrash, .hubBackup, .hubRestore, .crash, .switchAccount, .clock, .clockJump, .diskFull,
             .deviceBackup, .deviceRestore, .deviceClone:
            preconditionFailure("not an operation: \(operation)")
        }
    }

    /// The value of a set: `bytes` long, and naming its account, device and number, so the
    /// account checker can tell where any value came from.
    func valueText(on d: Int, bytes: Int) -> String {
        let prefix = "\(devices[d].store.account.rawValue)|d\(d)|\(metrics.sets)|"
        return prefix + String(repeating: ".", count: max(0, bytes - prefix.utf8.count))
    }

    /// A local write through the store's public API, recorded in the ledger if the store
    /// took it.
    func write(_ value: Value?, forKey key: String, on d: Int) {
        setClock(d)
        let store = devices[d].store
        let account = store.account
        let before = store.siblings(forKey: key)
        let shown = store.value(forKey: key)
        let usageBefore = store.usage
        changed(.device(d))
        do {
            try store.setValue(value, forKey: key)
        } catch {
            metrics.writesRefused += 1
            // A removal only ever shrinks usage: nothing but a full disk may refuse it.
            if value == nil && !refusedOnFullDisk(d, error) { report(Violation(.referenceModel, "at \(now) ms \(devices[d].id) refused to remove \(key): \(error)")) }
            return
        }
        let usageAfter = store.usage
        if options.topology != .hub && !quota.admits(usageBefore)
            && (usageAfter.keyCount > usageBefore.keyCount || usageAfter.valueBytes > usageBefore.valueBytes) {
            report(Violation(.quota, "\(devices[d].id) accepted a write of \(key) that grows usage while over the soft quota"), once: "soft-quota")
        }
        // The store's writer ID, not the device's replica ID: after it found its counters
        // reused (a restored disk) it writes as `ID~n`.
        let writer = store.writerID
        let written = store.siblings(forKey: key).first(where: { $0.dot.replica == writer && !before.contains($0) })
        if let written {
            _ = ledger.record(account: account, device: d, key: key, dot: written.dot, hasValue: value != nil, timeMs: now)
        }
        checkLocalWrite(value, forKey: key, on: d, written: written, hadLiveValue: before.contains { !$0.isTombstone })
        guard let written else { return }
        let index = ledger.writes.count - 1
        devices[d].unflushedWrites.append(index)
        ledger.markSuperseded(before.map(\.dot), account: account)
        metrics.recordResolution(superseded: before, shown: shown, ledger: ledger, account: account)
        observeContext(d)
        scheduleFlush(d)
        digest.update(written.dot.description)
    }

    /// Sets device `d`'s clock to its reading of the current virtual time.
    func setClock(_ d: Int) {
        devices[d].setClock(virtualMilliseconds: now, base: Self.baseMilliseconds)
    }

    func scheduleFlush(_ d: Int) {
        guard !devices[d].flushScheduled else { return }
        devices[d].flushScheduled = true
        queue.schedule(.flush(device: d), at: now + options.flushIntervalMs)
    }

    /// The disk of device `d` makes its writes durable: from now on the no-lost-write
    /// checker holds the run to them.
    func flush(_ d: Int) {
        guard !devices[d].crashed else { return }
        devices[d].disk.flush()
        model.flushed(device: d)
        for index in devices[d].unflushedWrites { ledger.writes[index].durable = true }
        devices[d].unflushedWrites.removeAll()
        // A new incarnation is on disk: the writes it re-stamped under dots another write
        // also has are gone for good (see `observeIncarnation`).
        for write in devices[d].replacedOnFlush {
            if let index = model.forget(write: write) { ledger.forget(index) }
        }
        devices[d].replacedSinceBackup += devices[d].replacedOnFlush
        devices[d].replacedOnFlush.removeAll()
    }
}
