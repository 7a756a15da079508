import Converge

/// The checks that run after every step of the event loop: every replica's and the hub's
/// own invariants (swift-collections' `_checkInvariants()` habit), in debug builds.
extension Simulation {
    /// Runs after every step (every event the loop handles). In debug builds it asks every
    /// replica the step changed (a device's store, the hub's accounts) for a broken
    /// invariant; the first one found is reported as an ``Violation/Kind/invariants``
    /// violation and ends the run, so the report and the reproduce command point at the
    /// step that broke it. A replica the step did not change cannot have broken, so the
    /// check costs what the step's own replicas hold, not the whole run's. Release builds
    /// compile the check out: it costs nothing there.
    ///
    /// The core also checks (and traps on) its invariants after each of its own mutations
    /// in debug builds; this catches what changes a state without going through one, and
    /// says which replica broke, at what virtual time, instead of stopping the process.
    func checkInvariantsAfterStep() {
        #if DEBUG
        invariantChecks += 1
        if let broken = brokenInvariant(among: changedThisStep) {
            violations.append(Violation(.invariants, "at \(now) ms, \(broken)"))
            finished = true
        }
        #endif
        changedThisStep.removeAll(keepingCapacity: true)
    }

    /// Notes that the current step changed `node`'s replicated state.
    func changed(_ node: Node) {
        changedThisStep.append(node)
    }

    /// The first broken invariant of the stores of `nodes` (and of the hub, if among them),
    /// described, or `nil`.
    ///
    /// - Complexity: O(*n*) in the siblings those replicas hold.
    func brokenInvariant(among nodes: [Node]) -> String? {
        for node in nodes {
            switch node {
            case .device(let d):
                if let violation = devices[d].store._invariantViolation() { return "\(devices[d].id)'s store: \(violation)" }
            case .hub:
                for account in hub.accountIDs {
                    if let violation = hub._invariantViolation(of: account) { return "the hub's state of \(account): \(violation)" }
                }
            }
        }
        return nil
    }
}
