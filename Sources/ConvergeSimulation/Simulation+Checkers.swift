@_spi(Testing) import Converge

/// The checkers of a run. Each reports into `violations` with what it found; the test
/// suite shows each one catching a ``BrokenVariant``.
extension Simulation {
    /// Quota: in the hub topology the hub's state never exceeds the quota, at any step.
    func checkHubQuota(account: AccountID) {
        let usage = hub.state(of: account).usage
        if !quota.admits(usage) {
            report(Violation(.quota, "at \(now) ms the hub's state of \(account) is over the quota: \(usage)"), once: "hub-quota")
        }
    }

    /// Accounts never mix: every value in a state of `account` was written in it.
    func checkNoLeak(_ state: ReplicatedMap, account: AccountID, at place: String) {
        for key in state.entries.keys.sorted() {
            for sibling in state.siblings(forKey: key) {
                if case .string(let text)? = sibling.value, !text.hasPrefix(account.rawValue + "|") {
                    violations.append(Violation(.accounts, "\(place) holds \"\(text.prefix(40))\" of another account under \(key)"))
                    return
                }
            }
        }
    }

    /// The first difference between replicas that must be identical, or `nil` once they
    /// all are: each device against the hub (or, in the mesh, against the first device of
    /// its account), in state and in visible values.
    func convergenceDifference() -> String? {
        var reference: [AccountID: (name: String, state: ReplicatedMap, values: [String: Value])] = [:]
        let policy = input.customPolicy ?? options.policy.policy
        if options.topology == .hub {
            for account in hub.accountIDs {
                let state = hub.state(of: account)
                reference[account] = ("the hub", state, Self.visibleValues(of: state, policy: policy))
            }
        }
        for device in devices {
            let store = device.store
            let account = store.account
            let state = store.replicatedState
            let values = store.values
            guard let expected = reference[account] else {
                reference[account] = (device.id.rawValue, state, values)
                continue
            }
            if state != expected.state && !(hubWasRestored && Self.differOnlyInWritesTheHubLost(state, reference: expected.state)) {
                return "\(device.id) on \(account) differs from \(expected.name): \(state.entries.count) keys with context \(state.context), against \(expected.state.entries.count) keys with context \(expected.state.context)"
                    + Self.firstDifferingKey(state, expected.state, names: (device.id.rawValue, expected.name))
            }
            if values != expected.values {
                let key = Set(values.keys).union(expected.values.keys).sorted().first { values[$0] != expected.values[$0] } ?? "?"
                return "\(device.id) on \(account) reads \(key) differently from \(expected.name)"
            }
        }
        return nil
    }

    /// Whether `a` and `b` hold one dot with different contents (key, timestamp, value).
    static func holdOneDotForTwoWrites(_ a: ReplicatedMap, _ b: ReplicatedMap) -> Bool {
        var written: [Dot: (key: String, sibling: Sibling)] = [:]
        for (key, siblings) in a.entries { for sibling in siblings { written[sibling.dot] = (key, sibling) } }
        for (key, siblings) in b.entries {
            for sibling in siblings {
                if let other = written[sibling.dot], other.key != key || other.sibling != sibling { return true }
            }
        }
        return false
    }

    /// The first key (in UTF-8 order) whose siblings differ between two states, with both
    /// sides' siblings (dot, time, tombstone), as the end of a difference's message: two
    /// states of as many keys under one context differ in what they hold, and only that
    /// says where.
    static func firstDifferingKey(_ state: ReplicatedMap, _ other: ReplicatedMap, names: (String, String)) -> String {
        let keys = Set(state.entries.keys).union(other.entries.keys).sortedByUTF8()
        guard let key = keys.first(where: { state.siblings(forKey: $0) != other.siblings(forKey: $0) }) else { return "" }
        func describe(_ siblings: [Sibling]) -> String {
            siblings.isEmpty ? "nothing"
                : siblings.map { "\($0.dot)@\($0.timestamp.wallMilliseconds)\($0.isTombstone ? " (removal)" : "")" }.joined(separator: ", ")
        }
        return "; first at \(key): \(names.0) holds \(describe(state.siblings(forKey: key))), \(names.1) holds \(describe(other.siblings(forKey: key)))"
    }

    /// Whether a device's `state` differs from the `hub`'s only in knowing more writes, none
    /// of which any replica holds (the entries are the same): writes a restored hub lost
    /// with its state after the device had seen them superseded, whose only witnesses are
    /// devices it does not believe on them. The hub believes a device's claims on others'
    /// writes only as far as it sent them (a member must not drop writes it never saw by
    /// claiming them), so it learns them again only from their writer, which may never push
    /// again (the hub's own lost incarnations never do). Whether any of them was a write
    /// that must still be visible is the model's to say, at the end (no lost write).
    static func differOnlyInWritesTheHubLost(_ state: ReplicatedMap, reference: ReplicatedMap) -> Bool {
        state.entries == reference.entries && reference.context.isDominated(by: state.context)
    }

    static func visibleValues(of state: ReplicatedMap, policy: MergePolicy) -> [String: Value] {
        var values: [String: Value] = [:]
        for key in state.entries.keys {
            if let value = state.visibleValue(forKey: key, policy: policy) { values[key] = value }
        }
        return values
    }

    /// After the liveness phase: the quota everywhere (hub) or flagged identically (mesh),
    /// no account leaks, and every replica against the reference model (no lost write, no
    /// write that should be gone, reads as the policy says), converged or not.
    func checkAfterConvergence() {
        if livenessMs != nil, let difference = convergenceDifference() {
            violations.append(Violation(.convergence, "\(difference)"))
        }
        var flags: [AccountID: Bool] = [:]
        for device in devices {
            let state = device.store.replicatedState
            let account = device.store.account
            checkNoLeak(state, account: account, at: "\(device.id)")
            let admitted = quota.admits(state.usage)
            if options.topology == .hub && !admitted && livenessMs != nil {
                violations.append(Violation(.quota, "\(device.id) is over the quota after convergence: \(state.usage)"))
            }
            if let flag = flags[account], flag != admitted {
                violations.append(Violation(.quota, "replicas of \(account) flag the soft quota differently"))
            }
            flags[account] = admitted
        }
        for account in hub.accountIDs { checkNoLeak(hub.state(of: account), account: account, at: "the hub") }
        checkEveryReplicaAgainstModel()
    }

    /// CRDT laws on two sampled replica states of one account: join is commutative and
    /// idempotent.
    func checkLawsOnSampledStates() {
        guard devices.count > 1 else { return }
        let i = (eventsProcessed / 256) % devices.count, j = (i + 1) % devices.count
        guard devices[i].store.account == devices[j].store.account else { return }
        let a = devices[i].store.replicatedState, b = devices[j].store.replicatedState
        // One dot naming two different writes (a restored or cloned device's reused counter
        // its store has not found out yet) makes the two states no replicas of one history:
        // the laws hold for states that agree on what each dot is.
        guard !Self.holdOneDotForTwoWrites(a, b) else { return }
        metrics.lawChecks += 1
        // The join under test is the stores' own, as they join what they receive.
        func join(_ x: ReplicatedMap, _ y: ReplicatedMap) -> ReplicatedMap { devices[i].store._joined(x, y) }
        if join(a, b) != join(b, a) {
            report(Violation(.crdtLaws, "join of \(devices[i].id) and \(devices[j].id) is not commutative at \(now) ms"), once: "commutativity")
            return
        }
        if join(a, a) != a {
            report(Violation(.crdtLaws, "join of \(devices[i].id) with itself changes it at \(now) ms"), once: "idempotence")
        }
    }
}
