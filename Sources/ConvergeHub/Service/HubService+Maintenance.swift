import Converge
import Foundation

/// The maintenance thread's state: whether to stop, and whether it has.
struct MaintenanceState {
    var running = false
    var stopRequested = false
}

extension HubService {
    /// Starts the hub's own schedule on a thread: every
    /// ``HubConfiguration/flushIntervalMilliseconds`` it writes the bookkeeping of
    /// "up to date" polls, and every ``HubConfiguration/maintenanceIntervalMilliseconds``
    /// it retires silent devices (which lets tombstones be collected) in every stored account.
    public func startMaintenance() {
        let started = maintenance.withLock { state -> Bool in
            guard !state.running else { return false }
            state.running = true
            state.stopRequested = false
            return true
        }
        guard started else { return }
        let thread = Thread { [self] in
            var nextRetirement = MonotonicClock.nowNanoseconds() + configuration.maintenanceIntervalMilliseconds * 1_000_000
            while true {
                let tick = min(configuration.flushIntervalMilliseconds, configuration.maintenanceIntervalMilliseconds, 100)
                var waited: UInt64 = 0
                while waited < configuration.flushIntervalMilliseconds {
                    if maintenance.withLock({ $0.stopRequested }) {
                        maintenance.withLock { $0.running = false }
                        return
                    }
                    usleep(UInt32(tick * 1_000))
                    waited += tick
                }
                flush()
                if MonotonicClock.nowNanoseconds() >= nextRetirement {
                    retireSilentDevices()
                    nextRetirement = MonotonicClock.nowNanoseconds() + configuration.maintenanceIntervalMilliseconds * 1_000_000
                }
            }
        }
        thread.name = "converge-hub maintenance"
        thread.start()
    }

    /// Stops the maintenance thread (waiting for it), then writes what is not yet written.
    public func stopMaintenance() {
        maintenance.withLock { $0.stopRequested = true }
        while maintenance.withLock({ $0.running }) { usleep(1_000) }
        flush()
    }

    /// Writes every account changed only by "up to date" polls.
    ///
    /// - Returns: How many accounts were written.
    @discardableResult
    public func flush() -> Int {
        let loaded = slots.withLock { Array($0) }
        var written = 0
        for (account, slot) in loaded.sorted(by: { $0.key < $1.key }) {
            let failed = slot.state.withLock { state -> Bool in
                guard state.dirty, state.machine != nil else { return false }
                do {
                    // On a newer copy another process wrote, the devices seen here are
                    // noted again before it is written.
                    if try update(&state, of: account, { _, _ throws(HubError) in (true, true) }) { written += 1 }
                    state.dirty = false
                    return false
                } catch {
                    metrics.recordMaintenanceFailure()
                    if let error = error as? HubError, case .storage = error { return true }
                    return false
                }
            }
            // The storage failed (the database is down, say): the rest would wait for it
            // too, one by one, and delay a shutdown; they are written by the next flush.
            // (An account that cannot be read does not stop the others.)
            if failed { break }
        }
        return written
    }

    /// Retires the devices of every stored account silent for longer than the retirement
    /// interval, collecting the tombstones that lets go, and commits each account changed.
    ///
    /// Accounts not in memory are loaded for this and let go again after.
    ///
    /// - Returns: How many devices were retired.
    @discardableResult
    public func retireSilentDevices() -> Int {
        let accounts: [AccountID]
        do { accounts = try store.accountIDs() } catch {
            metrics.recordMaintenanceFailure()
            return 0
        }
        var retiredCount = 0
        for account in accounts {
            let slot = self.slot(for: account)
            var failed = false
            let unload = slot.state.withLock { state -> Bool in
                let wasLoaded = state.machine != nil
                do {
                    retiredCount += try update(&state, of: account) { machine, _ throws(HubError) in
                        let retired = machine.retireSilentMembers(nowMilliseconds: clock.nowMilliseconds())
                        return (retired.count, !retired.isEmpty)
                    }
                } catch {
                    metrics.recordMaintenanceFailure()
                    if let error = error as? HubError, case .storage = error { failed = true }
                }
                return !wasLoaded && !state.dirty
            }
            if unload { slots.withLock { $0[account] = nil } }
            if failed { break }   // the storage failed: the next round retries the rest
        }
        metrics.recordRetirements(retiredCount)
        return retiredCount
    }
}
