import Converge

/// Propagation: when each write of the default account has reached every device.
extension Simulation {
    /// Records which writes of the default account device `d` now holds.
    func observeContext(_ d: Int) {
        guard devices[d].store.account == .default else { return }
        let context = devices[d].store.replicatedState.context
        for (replica, counter) in context.sortedEntries where counter > devices[d].observed[replica] {
            for c in (devices[d].observed[replica] + 1)...counter {
                if let latency = ledger.observe(Dot(replica: replica, counter: c), by: d, deviceCount: devices.count, now: now) {
                    metrics.propagationLatencies.append(latency)
                }
            }
        }
        devices[d].observed.formUnion(context)
    }
}
