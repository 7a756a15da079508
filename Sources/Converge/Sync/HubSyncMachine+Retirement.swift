/// Retirement: a member silent for longer than ``HubSyncMachine/retirementIntervalMilliseconds``
/// stops holding back tombstone collection, and gets the full state if it returns. The
/// machine remembers when the first member may be due (``HubSyncMachine/retirementDueMilliseconds``),
/// so that a push does not look at every member of every account.
extension HubSyncMachine {
    /// Records that `device` of `account` was seen at `nowMilliseconds`, if it is a member
    /// (never moving its time back): a hub process that answered the device's polls "up
    /// to date" from its own copy re-applies them on a newer copy another process wrote.
    package mutating func noteSeen(_ device: ReplicaID, of account: AccountID, atMilliseconds nowMilliseconds: UInt64) {
        guard let seen = accounts[account]?.members[device]?.lastSeenMilliseconds else { return }
        accounts[account]!.members[device]!.lastSeenMilliseconds = max(seen, nowMilliseconds)
    }

    /// Retires the members silent for longer than the retirement interval.
    ///
    /// - Returns: The retired members, by account, in order.
    /// - Complexity: O(1) until the first member may be due (the machine remembers when),
    ///   then O(*m* + *a* log *a*) for *m* members of *a* accounts.
    @discardableResult
    public mutating func retireSilentMembers(nowMilliseconds: UInt64) -> [(account: AccountID, device: ReplicaID)] {
        if let due = retirementDueMilliseconds, nowMilliseconds <= due { return [] }
        var retired: [(AccountID, ReplicaID)] = []
        var due = UInt64.max
        for account in accounts.keys.sorted() {
            var state = accounts[account]!
            var silent: [ReplicaID] = []
            for (device, member) in state.members {
                // Saturating: an interval too long to add to a time never runs out.
                let deadline = member.lastSeenMilliseconds.addingSaturating(retirementIntervalMilliseconds)
                if nowMilliseconds > deadline { silent.append(device) } else { due = min(due, deadline) }
            }
            guard !silent.isEmpty else { continue }
            silent.sort()
            accounts[account] = nil // not shared while it changes: see receive
            for device in silent {
                state.retired[device] = state.members[device]!.lastReplyContext
                state.members[device] = nil
                retired.append((account, device))
            }
            _ = collect(&state, changed: silent)
            accounts[account] = state
            _checkInvariants(of: account)
        }
        retirementDueMilliseconds = due
        return retired
    }
}
