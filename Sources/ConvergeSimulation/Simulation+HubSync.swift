import Converge

/// What the hub does with a device's push or poll: the real ``HubSyncMachine`` answers,
/// its compensating writes go into the write ledger, and the quota checker looks at its
/// state after every reply.
extension Simulation {
    func hubReceives(_ request: SyncMessage, from sender: Node) {
        changed(.hub)
        var compensations: [HubCompensation] = []
        guard let answer = hub.receive(request, nowMilliseconds: UInt64(Self.baseMilliseconds + now), compensations: &compensations)
        else { return }
        for compensation in compensations {
            metrics.quotaCompensations += 1
            ledger.markCompensated(compensation.superseded, account: compensation.account)
        }
        if case .reply(let reply) = answer {
            if reply.kind == .fullState { metrics.fullStateReplies += 1 }
            checkHubQuota(account: reply.account)
        } else {
            metrics.upToDateAnswers += 1
        }
        guard case .device(let d) = sender else { return }
        send(answer, from: .hub, to: .device(d))
    }
}
