import Converge

/// The device side of sync, in one place: what a device sends when it synchronizes (a
/// request to the hub, or gossip to a peer in the mesh) and what it does with what it
/// receives (a hub's reply, a peer's gossip).
///
/// The device's sync machines are the real ones; what to do with their answers is written
/// here. It is the part to replace with the store's own sync entry point.
extension Simulation {
    /// Device `d` synchronizes (by itself, or because the app asked): it flushes its disk
    /// (unless a broken variant says not to), then sends its request or gossip.
    func synchronize(_ d: Int) {
        guard !devices[d].crashed else { return }
        guard !network.isOffline(d) else { metrics.syncsWhileOffline += 1; return }
        if hooks.flushesBeforeSending { flush(d) }
        let device = devices[d]
        let state = device.store.replicatedState
        switch options.topology {
        case .hub:
            let request: SyncMessage = hooks.senderGuessesPeerContext
                ? .push(SyncPush(account: device.hubMachine.account, device: device.id, delta: state.delta(for: state.context)))
                : device.hubMachine.request(from: state)
            send(request, from: .device(d), to: .hub)
        case .mesh:
            guard devices.count > 1 else { return }
            let peer = (d + 1 + devices[d].meshRound % (devices.count - 1)) % devices.count
            devices[d].meshRound += 1
            send(.gossip(gossip(from: d, to: peer, state: state, wantsReply: true)), from: .device(d), to: .device(peer))
        }
    }

    /// The gossip device `d` sends `peer` for `state`.
    func gossip(from d: Int, to peer: Int, state: ReplicatedMap, wantsReply: Bool) -> SyncGossip {
        let device = devices[d]
        if hooks.senderGuessesPeerContext {
            return SyncGossip(account: device.meshMachine.account, sender: device.id, delta: state.delta(for: state.context),
                              wantsReply: wantsReply)
        }
        return device.meshMachine.gossip(to: devices[peer].id, from: state, wantsReply: wantsReply)
    }

    /// Device `d` takes the hub's reply.
    func deviceReceives(_ reply: SyncReply, device d: Int) {
        guard let accepted = devices[d].hubMachine.receive(reply) else { return }
        setClock(d)
        do { try devices[d].store.apply(accepted) } catch {
            violations.append("storage: \(devices[d].id) could not apply a reply: \(error)")
        }
        if !accepted.rejectedKeys.isEmpty { metrics.quotaViolationNotices += 1 }
        observeContext(d)
        scheduleFlush(d)
    }

    /// Device `d` takes a peer's gossip, and answers it if the peer asked.
    func deviceReceives(_ incoming: SyncGossip, device d: Int) {
        guard let accepted = devices[d].meshMachine.receive(incoming) else { return }
        setClock(d)
        do { try devices[d].store.merge(accepted.delta) } catch {
            violations.append("storage: \(devices[d].id) could not merge gossip: \(error)")
        }
        observeContext(d)
        scheduleFlush(d)
        if accepted.wantsReply, let peer = devices.firstIndex(where: { $0.id == accepted.sender }) {
            if hooks.flushesBeforeSending { flush(d) }
            send(.gossip(gossip(from: d, to: peer, state: devices[d].store.replicatedState, wantsReply: false)),
                 from: .device(d), to: .device(peer))
        }
    }
}
