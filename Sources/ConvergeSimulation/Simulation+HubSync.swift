import Converge

/// What the hub does with a device's push or poll: the real ``HubSyncMachine`` answers,
/// its compensating writes go into the write ledger, and the quota checker looks at its
/// state after every reply.
extension Simulation {
    /// - Parameter answered: Whether the answer can reach the sender (not when the process
    ///   that sent the request has lost its disk since: ``SimulatedNetwork/orphanMessages(from:)``).
    func hubReceives(_ request: SyncMessage, from sender: Node, message id: Int, lastCopy: Bool, answered: Bool = true) {
        changed(.hub)
        // A push brings the hub what its device knew; a poll brings nothing.
        var account: AccountID?
        var knownBefore = ReferenceModel.Knowledge()
        if case .push(let push) = request {
            account = push.account
            knownBefore = model.knowledge(of: .hub, in: push.account)
            if case .device = sender, hub.refusesForReusedCounters(push) {
                // The hub takes nothing of a push whose write sessions show its counters reused.
                // The model cannot tell sessions apart; what it checks is that nothing is lost.
                model.dropped(message: id, lastCopy: lastCopy)
            } else if case .device(let d) = sender {
                let entries = push.delta.entries.values.flatMap { $0.map { Self.modelID($0.dot) } }
                var basis = ReferenceModel.Counters()
                for (replica, counter) in push.basis.sortedEntries { basis[replica.rawValue] = counter }
                model.hubReceivedPush(message: id, from: d, writer: push.device.rawValue, hub: hub.hubID.base.rawValue, entries: entries, basis: basis, lastCopy: lastCopy)
            } else {
                model.delivered(message: id, to: .hub, currentAccount: nil, lastCopy: lastCopy)
            }
        } else {
            model.dropped(message: id, lastCopy: lastCopy)
        }
        var compensations: [HubCompensation] = []
        // A refused push (stamped too far ahead of the hub's clock) is answered with nothing.
        guard let answer = try? hub.receive(request, nowMilliseconds: UInt64(Self.baseMilliseconds + now), compensations: &compensations)
        else { return }
        metrics.quotaCompensations += compensations.count
        for compensation in compensations {
            let restored = compensation.restoredSiblings.map { $0.isTombstone ? "removed by \($0.dot)" : "= \($0.dot)" }.joined(separator: " | ")
            recordMoment("the hub compensates \(compensation.key) to keep the quota: \(compensation.offending.map(\.description).joined(separator: ", ")) superseded, \(compensation.key) \(restored)")
        }
        if let account { checkCompensations(compensations, account: account, knownBefore: knownBefore) }
        if case .reply(let reply) = answer {
            if case .device(let d) = sender {
                var context = ReferenceModel.Counters()
                // A relative reply carries what changed of the hub's whole context.
                let whole = reply.relativeTo == nil ? reply.delta.context : hub.state(of: reply.account).context
                for (replica, counter) in whole.sortedEntries { context[replica.rawValue] = counter }
                model.hubReplied(to: d, account: reply.account, context: context)
            }
            if reply.kind == .fullState { metrics.fullStateReplies += 1 }
            checkHubQuota(account: reply.account)
        } else {
            metrics.upToDateAnswers += 1
        }
        guard case .device(let d) = sender, answered else { return }
        let answered: AccountID
        switch answer {
        case .reply(let reply): answered = reply.account
        case .upToDate(let upToDate): answered = upToDate
        case .push(let push): answered = push.account
        case .poll(let poll): answered = poll.account
        case .gossip(let gossip): answered = gossip.account
        }
        send(answer, of: answered, from: .hub, to: .device(d))
    }
}
