import Converge

/// Sending sync messages through the ``SimulatedNetwork`` and delivering them: every
/// message is encoded to bytes on the way out and decoded on the way in, as a real
/// transport would, then handed to the hub or to a device.
extension Simulation {
    typealias Node = SimulatedNetwork.Node

    /// Sends `message` of `account`: the reference model notes what its sender knew.
    func send(_ message: SyncMessage, of account: AccountID, from: Node, to: Node) {
        let bytes: [UInt8]
        do { bytes = try message.encoded() } catch {
            violations.append(Violation(.sync, "a message could not be encoded: \(error)"))
            return
        }
        send(encoded: bytes, of: account, from: from, to: to)
    }

    func send(encoded bytes: [UInt8], of account: AccountID, from: Node, to: Node) {
        guard let id = transmit(bytes, from: from, to: to) else { return }
        model.sent(message: id, from: from, account: account, cap: pageCap(of: bytes, of: account, from: from))
    }

    /// What a page of the hub protocol (a push or reply cut to fit `hubMessageBytes`)
    /// claims to carry: its context, when that is below its sender's (a whole change
    /// carries the sender's context). `nil` for anything else.
    private func pageCap(of bytes: [UInt8], of account: AccountID, from sender: Node) -> ReferenceModel.Counters? {
        guard options.topology == .hub, options.hubMessageBytes < SyncMessage.maximumEncodedBytes,
              let message = try? SyncMessage(encoded: bytes) else { return nil }
        let carried: ReplicatedMap.Delta
        switch message {
        case .push(let push): carried = push.delta
        case .reply(let reply) where reply.relativeTo != nil: return nil  // a hub makes only whole replies relative
        case .reply(let reply): carried = reply.delta
        case .gossip, .poll, .upToDate: return nil
        }
        let whole: VersionVector
        switch sender {
        case .hub: whole = hub.state(of: account).context
        case .device(let d): whole = devices[d].store.replicatedState.context
        }
        guard carried.context != whole else { return nil }
        var cap: ReferenceModel.Counters = [:]
        for (replica, counter) in carried.context.sortedEntries { cap[replica.rawValue] = counter }
        return cap
    }

    /// Puts `bytes` on the network and schedules each copy's delivery; returns the
    /// message's number if any copy is on its way.
    @discardableResult
    func transmit(_ bytes: [UInt8], from: Node, to: Node) -> Int? {
        metrics.messagesSent += 1
        metrics.bytesSent += bytes.count
        digest.update(bytes.count)
        let sent = network.send(bytes, from: from, to: to, crashed: isCrashed)
        recordSent(bytes, from: from, to: to, sent: sent)
        switch sent.outcome {
        case .droppedByFault: metrics.messagesDroppedByFaults += 1
        case .droppedByFullQueue: metrics.messagesDroppedByFullQueues += 1
        case .lost: metrics.messagesLost += 1
        case .inFlight(let id, let delays):
            if delays.count > 1 { metrics.messagesDuplicated += delays.count - 1 }
            for delay in delays { queue.schedule(.deliver(message: id), at: now + max(0, delay)) }
            return id
        }
        return nil
    }

    func deliver(_ id: Int) {
        let message: SimulatedNetwork.Message
        switch network.deliver(id, crashed: isCrashed) {
        case .none: return
        case .droppedByFault:
            metrics.messagesDroppedByFaults += 1
            recordArrival(of: id, delivered: false)
            // The last copy cut: what it carried reaches nobody (a restored device's write
            // only it carried is lost with the disk).
            if options.topology != .folder && network.receiver(of: id) == nil { model.dropped(message: id, lastCopy: true) }
            return
        case .delivered(let delivered):
            message = delivered
            recordArrival(of: id, delivered: true)
        }
        let lastCopy = message.copiesLeft == 0
        digest.update(id)
        digest.update(message.bytes)
        let damaged = damagedCopy(of: message.bytes, message: message.decided, copiesLeft: message.copiesLeft)
        if options.topology == .folder {
            // A file, not a message: it appears in the receiver's folder, if it still exists
            // (damaged, if it was damaged on the way: the reader skips it until a sound copy
            // or the writer's next snapshot arrives).
            if let path = fileDeliveries[id], case .device(let d) = message.to {
                if let damaged { folder.deliverDamaged(path, to: d, bytes: damaged) } else { folder.deliver(path, to: d) }
            }
            if lastCopy { fileDeliveries[id] = nil }
            return
        }
        if let damaged {
            // The receiver must refuse it, as a message lost on the way. A copy that decodes
            // was taken for another message than the one sent: the integrity checker, which
            // compares with what was sent, not with what the decoder says.
            guard let taken = try? SyncMessage(encoded: damaged) else {
                metrics.damagedMessagesRefused += 1
                model.dropped(message: id, lastCopy: lastCopy)
                return
            }
            if (try? taken.encoded()) != message.bytes {
                report(Violation(.integrity, "a message damaged on the way (message \(id), one bit flipped) was taken as valid"))
            }
        }
        let decoded: SyncMessage
        do { decoded = try SyncMessage(encoded: damaged ?? message.bytes) } catch {
            violations.append(Violation(.sync, "a message the simulator sent does not decode: \(error)"))
            return
        }
        switch (decoded, message.to) {
        case (.push, .hub), (.poll, .hub):
            hubReceives(decoded, from: message.from, message: id, lastCopy: lastCopy, answered: !message.orphaned)
        case (.upToDate, .device(let d)), (.reply, .device(let d)), (.gossip, .device(let d)):
            deviceReceives(decoded, device: d, from: message.from, message: id, lastCopy: lastCopy, answered: !message.orphaned)
        default:
            violations.append(Violation(.sync, "a message reached the wrong kind of node"))
        }
    }

    func isCrashed(_ d: Int) -> Bool { devices[d].crashed }

    /// The copy of a message or file as it arrives if the network damages it (one bit
    /// flipped), or `nil` if it arrives sound: damage happens with probability
    /// `corruptMessages` before the heal. Decided by a hash of the seed, the message and
    /// the copy, not by the network's random stream, so a recorded trace replays it as is.
    func damagedCopy(of bytes: [UInt8], message id: MessageID, copiesLeft: Int) -> [UInt8]? {
        guard options.corruptMessages > 0, !healed, !bytes.isEmpty else { return nil }
        // Drawn from the message's place on its link, as network decisions are, so a shrunk
        // run damages the same messages.
        func code(_ lane: SimulationTimeline.Lane) -> UInt64 {
            switch lane {
            case .hub: 0
            case .device(let d): UInt64(d) + 1
            }
        }
        let link = (code(id.from) << 24 | code(id.to)) &* 0xBF58_476D_1CE4_E5B9
        var mixer = SplitMix64(seed: input.seed ^ (UInt64(id.number) &* 0x9E37_79B9_7F4A_7C15) ^ link ^ (UInt64(copiesLeft) << 48))
        let draw = mixer.next()
        guard Double(draw >> 11) / Double(1 << 53) < options.corruptMessages else { return nil }
        let bit = Int(mixer.next() % UInt64(bytes.count * 8))
        metrics.damagedCopies += 1
        var damaged = bytes
        damaged[bit / 8] ^= 1 << UInt8(bit % 8)
        // A link without integrity checks hands over damaged bytes with a checksum that
        // matches them (the broken variant): only what is behind the checksum can then
        // refuse them.
        if hooks.linkResealsDamage && damaged.count >= 4 { damaged = CRC32C.sealed(Array(damaged.dropLast(4))) }
        return damaged
    }
}
