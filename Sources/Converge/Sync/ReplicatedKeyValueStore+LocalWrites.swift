/// Local-write signals: what an automatic sync waits for before it pushes (debounced), so
/// a device syncs after its own writes without the app calling anything.
extension ReplicatedKeyValueStore {
    /// Calls `handler` after every local write attempt through this object
    /// (``setValue(_:forKey:)``, ``setValues(_:)`` and the compatible setters), until the
    /// token is cancelled or released. A refused write calls it too: the handler only
    /// learns that something may be new, and must look at the store to find out what.
    ///
    /// Handlers get the keys written, and run on the writing thread, after the store's
    /// locks are released.
    package func observeLocalWrites(_ handler: @escaping @Sendable ([String]) -> Void) -> ObservationToken {
        let id = observers.withLock { observers in
            let id = observers.nextID
            observers.nextID += 1
            observers.localWriteHandlers[id] = handler
            return id
        }
        return ObservationToken { [weak self] in
            _ = self?.observers.withLock { $0.localWriteHandlers.removeValue(forKey: id) }
        }
    }

    /// Tells the local-write observers that a write of `keys` was attempted; `keys` is
    /// worked out only if there are any (most stores have none, and a write of one key
    /// would otherwise allocate an array for nobody).
    func notifyLocalWrite(keys: @autoclosure () -> [String]) {
        let handlers = observers.withLock { observers in
            observers.localWriteHandlers.isEmpty ? [] : observers.localWriteHandlers.sorted { $0.key < $1.key }.map(\.value)
        }
        guard !handlers.isEmpty else { return }
        let keys = keys()
        for handler in handlers { handler(keys) }
    }

    /// Whether the hub should be asked again at once: the last reply was one page of
    /// several, or the device owes the hub the acknowledgement of a full state it joined.
    package var needsAnotherHubExchange: Bool {
        state.withLock { $0.hubMachine.expectsMorePages || $0.hubMachine.owesFullStateAcknowledgement }
    }

    /// Whether the store holds writes the hub has not reported holding (as far as this
    /// object knows: writes of other processes on its storage are seen after a
    /// ``refresh()``).
    package var hasChangesTheHubLacks: Bool {
        state.withLock { !$0.map.context.isDominated(by: $0.hubMachine.hubContext) }
    }
}
