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
        model.sent(message: id, from: from, account: account)
    }

    /// Puts `bytes` on the network and schedules each copy's delivery; returns the
    /// message's number if any copy is on its way.
    @discardableResult
    func transmit(_ bytes: [UInt8], from: Node, to: Node) -> Int? {
        metrics.messagesSent += 1
        metrics.bytesSent += bytes.count
        digest.update(bytes.count)
        switch network.send(bytes, from: from, to: to, crashed: isCrashed) {
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
        case .droppedByFault: metrics.messagesDroppedByFaults += 1; return
        case .delivered(let delivered): message = delivered
        }
        let lastCopy = message.copiesLeft == 0
        digest.update(id)
        digest.update(message.bytes)
        if options.topology == .folder {
            // A file, not a message: it appears in the receiver's folder, if it still exists.
            if let path = fileDeliveries[id], case .device(let d) = message.to { folder.deliver(path, to: d) }
            if lastCopy { fileDeliveries[id] = nil }
            return
        }
        let decoded: SyncMessage
        do { decoded = try SyncMessage(encoded: message.bytes) } catch {
            violations.append(Violation(.sync, "a message the simulator sent does not decode: \(error)"))
            return
        }
        switch (decoded, message.to) {
        case (.push, .hub), (.poll, .hub):
            hubReceives(decoded, from: message.from, message: id, lastCopy: lastCopy)
        case (.upToDate, .device(let d)), (.reply, .device(let d)), (.gossip, .device(let d)):
            deviceReceives(decoded, device: d, message: id, lastCopy: lastCopy)
        default:
            violations.append(Violation(.sync, "a message reached the wrong kind of node"))
        }
    }

    func isCrashed(_ d: Int) -> Bool { devices[d].crashed }
}
