import Converge

/// What the hub does with a device's push or poll: the real ``HubSyncMachine`` answers,
/// its compensating writes go into the write ledger, and the quota checker looks at its
/// state after every reply.
extension Simulation {
    func hubReceives(_ request: SyncMessage, from sender: Node, message id: Int, lastCopy: Bool) {
        changed(.hub)
        // A push brings the hub what its device knew; a poll brings nothing.
        var account: AccountID?
        var knownBefore = ReferenceModel.Knowledge()
        if case .push(let push) = request {
            account = push.account
            knownBefore = model.knowledge(of: .hub, in: push.account)
            model.delivered(message: id, to: .hub, currentAccount: nil, lastCopy: lastCopy)
        } else {
            model.dropped(message: id, lastCopy: lastCopy)
        }
        var compensations: [HubCompensation] = []
        // A refused push (stamped too far ahead of the hub's clock) is answered with nothing.
        guard let answer = try? hub.receive(request, nowMilliseconds: UInt64(Self.baseMilliseconds + now), compensations: &compensations)
        else { return }
        metrics.quotaCompensations += compensations.count
        if let account { checkCompensations(compensations, account: account, knownBefore: knownBefore) }
        if case .reply(let reply) = answer {
            if reply.kind == .fullState { metrics.fullStateReplies += 1 }
            checkHubQuota(account: reply.account)
        } else {
            metrics.upToDateAnswers += 1
        }
        guard case .device(let d) = sender else { return }
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
