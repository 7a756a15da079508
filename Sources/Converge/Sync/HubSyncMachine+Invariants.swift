extension HubSyncMachine {
    /// Traps if an invariant of any account is broken, in debug builds only; release builds
    /// pay nothing. The simulator calls it after every step.
    @inline(__always)
    package func _checkInvariants() {
        #if DEBUG
        for account in accountIDs { _checkInvariants(of: account) }
        #endif
    }

    /// Traps if an invariant of `account` is broken, in debug builds only. Called after
    /// every change to an account.
    @inline(__always)
    func _checkInvariants(of account: AccountID) {
        #if DEBUG
        if let violation = _invariantViolation(of: account) {
            preconditionFailure("HubSyncMachine invariant broken in \(account): \(violation)")
        }
        #endif
    }

    /// The first broken invariant of `account`, described, or `nil` if all hold:
    /// - the replicated state and the stability tracker hold their own invariants, and the
    ///   hub's clock is at or past every timestamp in the state, so its compensating
    ///   writes are stamped after what they supersede;
    /// - no device is both a member and retired, and a device awaiting a full state is one
    ///   or the other;
    /// - what any member acknowledged, and what the hub last replied to it, is within the
    ///   hub's context (a device cannot hold what the hub never had), and a reply's stable
    ///   frontier within the reply's context;
    /// - no member is due for retirement before the time the hub reckons the first one is
    ///   (``retirementDueMilliseconds``);
    /// - a device's recorded sessions reach a counter the hub holds, and name its session;
    /// - the minimum of the acknowledgements kept by difference holds the members' and the
    ///   hub's, and equals one computed afresh from them;
    /// - the stable frontier is within the hub's context (the hub is one of the
    ///   acknowledgements it is the minimum of).
    ///
    /// - Complexity: O(*n* + *m* · *r*) for *n* siblings and *m* members of *r* replicas.
    package func _invariantViolation(of account: AccountID) -> String? {
        guard let state = accounts[account] else { return nil }
        if let violation = state.map._invariantViolation(clockAtLeast: state.clock.latest) { return "state: \(violation)" }
        if let violation = state.stability._invariantViolation() { return "stability: \(violation)" }
        let context = state.map.context
        for device in state.members.keys.sorted() {
            let member = state.members[device]!
            if state.retired[device] != nil { return "\(device) is both a member and retired" }
            if !member.acknowledged.isDominated(by: context) {
                return "\(device) acknowledged \(member.acknowledged), beyond the hub's context \(context)"
            }
            if !member.lastReplyContext.isDominated(by: context) {
                return "the last reply to \(device) carried \(member.lastReplyContext), beyond the hub's context \(context)"
            }
            if !member.lastReplyFrontier.isDominated(by: member.lastReplyContext) {
                return "the last reply to \(device) announced the frontier \(member.lastReplyFrontier) beyond its context"
            }
            let deadline = member.lastSeenMilliseconds.addingSaturating(retirementIntervalMilliseconds)
            if let due = retirementDueMilliseconds, deadline < due {
                return "\(device) is due for retirement at \(deadline), before the \(due) the hub reckons the first member is due"
            }
        }
        for device in state.awaitingFullState.keys.sorted() where state.members[device] == nil && state.retired[device] == nil {
            return "\(device) awaits a full state but is neither a member nor retired"
        }
        for device in state.sessions.keys.sorted() {
            let known = state.sessions[device]!
            if known.through > context[device] { return "the sessions of \(device) reach \(known.through), beyond the hub's context \(context)" }
            if known.tip == nil { return "the sessions of \(device) do not reach back to \(known.through)" }
        }
        if !state.acknowledgedMinimum.acknowledged.isEmpty {
            let acknowledged = state.acknowledgements(hub: hubID)
            if state.acknowledgedMinimum.acknowledged != acknowledged {
                return "the acknowledgements the kept minimum holds are not the members' and the hub's"
            }
            var fresh = AcknowledgedMinimum()
            fresh.update(to: acknowledged)
            if state.acknowledgedMinimum.minimum != fresh.minimum || state.acknowledgedMinimum.witnessed != fresh.witnessed {
                return "the kept minimum of the acknowledgements \(state.acknowledgedMinimum.minimum) is not theirs, \(fresh.minimum)"
            }
        }
        if !state.stability.safeFrontier.isDominated(by: context) {
            return "the stable frontier \(state.stability.safeFrontier) is beyond the hub's context \(context)"
        }
        return nil
    }
}
