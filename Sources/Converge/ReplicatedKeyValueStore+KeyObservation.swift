import Synchronization

/// Observing one key: its visible value as an `AsyncStream`, whoever changed it.
extension ReplicatedKeyValueStore {
    /// The visible value of `key` now, then each time it changes: by a write through this
    /// object, a change from another device or another process (once this object takes
    /// it: a sync, a write, ``refresh()``), or an account switch. `nil` while the key is
    /// absent and has no registered default. Consecutive equal values are sent once.
    ///
    /// Each call returns a new stream, which ends when the task iterating it is
    /// cancelled; it keeps the newest value if the reader falls behind.
    ///
    /// ```swift
    /// for await theme in store.values(forKey: "theme") {
    ///     apply(theme?.stringValue ?? "light")
    /// }
    /// ```
    public func values(forKey key: String) -> AsyncStream<Value?> {
        let key = Self.canonicalSpelling(of: key)
        let (stream, continuation) = AsyncStream.makeStream(of: Value?.self, bufferingPolicy: .bufferingNewest(1))
        // The last value sent; checked and sent under one lock so values go out in order.
        let last = Mutex<Value??>(.none)
        let send: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            last.withLock { last in
                let current = self.value(forKey: key)
                if case .some(let previous) = last, previous == current { return }
                last = .some(current)
                continuation.yield(current)
            }
        }
        let events = observe { event in
            if case .externalChange(let change) = event, change.keys.contains(key) || change.reason == .accountChange { send() }
        }
        let writes = observeLocalWrites { keys in
            if keys.contains(key) { send() }
        }
        continuation.onTermination = { _ in
            events.cancel()
            writes.cancel()
        }
        send()
        return stream
    }
}
