import Converge

/// The device side of sync: what a device sends when it synchronizes (a request to the
/// hub, or gossip to a peer in the mesh) comes from its store's sync seam, and what it
/// receives is carried out by its store (`ReplicatedKeyValueStore.receive(_:)`), the one
/// place every transport uses. The simulator only moves the bytes and observes.
extension Simulation {
    /// Device `d` synchronizes (by itself, or because the app asked): it flushes its disk
    /// (unless a broken variant says not to), then sends its request or gossip.
    func synchronize(_ d: Int) {
        guard !devices[d].crashed else { return }
        guard !network.isOffline(d) else { metrics.syncsWhileOffline += 1; return }
        if hooks.flushesBeforeSending { flush(d) }
        switch options.topology {
        case .hub:
            guard let request = hubRequest(from: d) else { return }
            send(encoded: request, of: devices[d].store.account, from: .device(d), to: .hub)
        case .mesh:
            guard devices.count > 1 else { return }
            let peer = (d + 1 + devices[d].meshRound % (devices.count - 1)) % devices.count
            devices[d].meshRound += 1
            guard let gossip = gossip(from: d, to: peer) else { return }
            send(encoded: gossip, of: devices[d].store.account, from: .device(d), to: .device(peer))
        case .folder:
            synchronizeThroughFolder(d)
        }
    }

    /// The request device `d` sends the hub: its store's, or a guess for a broken variant.
    private func hubRequest(from d: Int) -> [UInt8]? {
        let store = devices[d].store
        do {
            guard hooks.senderGuessesPeerContext else { return try store.hubRequest().bytes }
            let state = store.replicatedState
            return try SyncMessage.push(SyncPush(account: store.account, device: store.replicaID,
                                                 delta: state.delta(for: state.context))).encoded()
        } catch {
            if !refusedOnFullDisk(d, error) { violations.append(Violation(.sync, "\(devices[d].id) could not make a request: \(error)")) }
            return nil
        }
    }

    /// The gossip device `d` starts an exchange with `peer` with: its store's, or a guess
    /// for a broken variant.
    private func gossip(from d: Int, to peer: Int) -> [UInt8]? {
        let store = devices[d].store
        do {
            guard hooks.senderGuessesPeerContext else { return try store.gossip(to: devices[peer].replicaID) }
            let state = store.replicatedState
            return try SyncMessage.gossip(SyncGossip(account: store.account, sender: store.replicaID,
                                                     delta: state.delta(for: state.context), wantsReply: true)).encoded()
        } catch {
            if !refusedOnFullDisk(d, error) { violations.append(Violation(.sync, "\(devices[d].id) could not make gossip: \(error)")) }
            return nil
        }
    }

    /// Whether `error` is device `d`'s store refusing an operation because its disk is full
    /// (an expected outcome of the disk-full fault, counted), not a failure.
    func refusedOnFullDisk(_ d: Int, _ error: any Error) -> Bool {
        guard devices[d].disk.isFull, case ConvergeError.storage(let failure)? = error as? ConvergeError,
              failure.kind == .diskFull else { return false }
        metrics.refusedOnFullDisk += 1
        return true
    }

    /// Device `d` takes a message from the hub or a peer: its store carries it out, and
    /// answers a peer that asked.
    func deviceReceives(_ message: SyncMessage, device d: Int, from sender: Node, message id: Int, lastCopy: Bool, answered: Bool = true) {
        changed(.device(d))
        setClock(d)
        let receipt: SyncReceipt
        let before = (writer: devices[d].store.writerID, state: devices[d].store.replicatedState, keptAside: keptAsideStates(d))
        do { receipt = try devices[d].store.receive(message) } catch {
            // On a full disk the store refuses the message and changes nothing: the model is
            // not told of it, so anything the store took anyway shows as a write it cannot know.
            if !refusedOnFullDisk(d, error) { violations.append(Violation(.storage, "\(devices[d].id) could not take a message: \(error)")) }
            model.dropped(message: id, lastCopy: lastCopy)
            return
        }
        if let reason = receipt.ignored { recordRefusal(of: id, reason) }
        if receipt.startedIncarnation || devices[d].store.writerID != before.writer {
            // The message proved the device's counters reused: the store did not apply it
            // (it was computed for the wrong context) and re-stamped its unacknowledged writes.
            model.dropped(message: id, lastCopy: lastCopy)
            observeIncarnation(d, writerBefore: before.writer, stateBefore: before.state, keptAsideBefore: before.keptAside)
            scheduleFlush(d)
            return
        }
        // A reply or gossip brings the device what its sender knew (if the device is still on
        // its account); an up-to-date answer brings nothing.
        if case .upToDate = message {
            model.dropped(message: id, lastCopy: lastCopy)
        } else if case .fromSelf? = receipt.ignored {
            // Gossip under the device's own replica ID (a twin cloned from the same disk): the
            // store takes nothing from it.
            model.dropped(message: id, lastCopy: lastCopy)
        } else if receipt.ignored == .reusedCounters || receipt.ignored == .otherIncarnation || receipt.ignored == .staleReport {
            // Gossip whose sender's write sessions contradict its earlier gossip (a restored
            // or copied sender) or the device's records, computed for another writer ID of this
            // device, or for more than it holds: nothing taken, and the sender is answered.
            model.dropped(message: id, lastCopy: lastCopy)
        } else if case .unexpected? = receipt.ignored {
            // An answer to the device's previous incarnation (``SyncReply/device``): nothing taken.
            model.dropped(message: id, lastCopy: lastCopy)
        } else if case .staleRelativeReply? = receipt.ignored {
            // A reply relative to a hub context the device no longer holds: nothing taken.
            model.dropped(message: id, lastCopy: lastCopy)
        } else {
            model.delivered(message: id, to: .device(d), currentAccount: devices[d].store.account, lastCopy: lastCopy)
            if !receipt.adopted.isEmpty { observeAdoption(d, receipt.adopted) }
        }
        if !receipt.rejectedKeys.isEmpty { metrics.quotaViolationNotices += 1 }
        observeContext(d)
        scheduleFlush(d)
        // The device that sent the gossip, not the first with its replica ID: clones share one.
        if let (_, answer) = receipt.answer, case .device(let peer) = sender, answered {
            if hooks.flushesBeforeSending { flush(d) }
            send(answer, of: devices[d].store.account, from: .device(d), to: .device(peer))
        }
    }
}
