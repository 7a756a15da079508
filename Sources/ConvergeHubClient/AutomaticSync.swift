import Converge
import Synchronization

/// Syncs a store with its hub without the app calling anything, as iCloud does: after
/// local writes (debounced), periodically, and at once when the app says the network came
/// back; after failures, with exponential backoff and jitter. Changes from other devices
/// arrive as `didChangeExternallyNotification`, as with `ReplicatedKeyValueStore.sync()`.
///
/// ```swift
/// let store = try ReplicatedKeyValueStore(replicaID: "phone", transport: HubHTTPTransport(hub: url, token: token),
///                                         account: "alice", storage: SQLiteStorage(path: path))
/// let automaticSync = AutomaticSync(store: store)
/// automaticSync.start()
/// // … the app writes; other devices' changes arrive as notifications …
/// await automaticSync.stop()
/// ```
///
/// One exchange runs at a time, on a queue of its own (not the cooperative thread pool,
/// which an app may keep busy); the decisions are those of a ``SyncSchedule``.
public final class AutomaticSync: Sendable {
    /// The store kept in sync.
    public let store: ReplicatedKeyValueStore

    private let state: Mutex<State>
    private let clock = ContinuousClock()
    /// Where the timer and the exchanges run: a queue of their own, not the cooperative
    /// pool, so a busy pool does not stall syncing.
    private let executor = SerialQueueExecutor(label: "org.converge.automatic-sync")
    private let origin: ContinuousClock.Instant

    private struct State: Sendable {
        var schedule: SyncSchedule
        var running = false
        var inFlight: Task<Void, Never>?
        /// Sleeps until the next sync is due, then starts it.
        var timer: Task<Void, Never>?
        var writes: ObservationToken?
        var lastError: String?
        var exchanges = 0
    }

    /// Creates an automatic sync of `store`; it does nothing until ``start()``.
    ///
    /// - Parameters:
    ///   - store: A store created with a transport (`ReplicatedKeyValueStore.sync()`
    ///     exchanges through it).
    ///   - configuration: The debounce, the period and the backoff.
    public init(store: ReplicatedKeyValueStore, configuration: SyncSchedule.Configuration = SyncSchedule.Configuration()) {
        self.store = store
        origin = clock.now
        state = Mutex(State(schedule: SyncSchedule(configuration: configuration, nowMilliseconds: 0)))
    }

    deinit {
        state.withLock { $0.timer?.cancel() }
    }

    /// Starts syncing: a first exchange at once, then as the schedule says. Calling it
    /// again while running does nothing.
    public func start() {
        let token = store.observeLocalWrites { [weak self] _ in self?.localWrite() }
        let started = state.withLock { state -> Bool in
            guard !state.running else { return false }
            state.running = true
            state.writes = token
            state.schedule.networkBecameAvailable(nowMilliseconds: now)
            return true
        }
        if !started { token.cancel() }
        rearm()
    }

    /// Stops syncing: cancels an exchange in flight (its retries and waits end at once; a
    /// cancelled exchange is like a lost one, which the next repairs) and waits for it to
    /// end, so nothing is exchanged after this returns.
    public func stop() async {
        let inFlight = state.withLock { state -> Task<Void, Never>? in
            state.inFlight?.cancel()
            state.running = false
            state.writes?.cancel()
            state.writes = nil
            state.timer?.cancel()
            state.timer = nil
            return state.inFlight
        }
        await inFlight?.value
    }

    /// Tells the schedule the network is back (from the app's reachability source): sync
    /// at once, forgetting the backoff of earlier failures.
    public func networkBecameAvailable() {
        state.withLock { $0.schedule.networkBecameAvailable(nowMilliseconds: now) }
        rearm()
    }

    /// The error of the last exchange, if it failed (`nil` after a success).
    public var lastError: String? { state.withLock { $0.lastError } }
    /// The exchanges attempted so far.
    public var exchanges: Int { state.withLock { $0.exchanges } }
    /// Syncs that failed in a row.
    public var consecutiveFailures: Int { state.withLock { $0.schedule.consecutiveFailures } }

    private var now: UInt64 {
        SyncSchedule.milliseconds(origin.duration(to: clock.now))
    }

    private func localWrite() {
        state.withLock { $0.schedule.localWrite(nowMilliseconds: now) }
        rearm()
    }

    /// Sets the timer to the schedule's next sync (or to never while stopped or in flight).
    private func rearm() {
        state.withLock { state in
            state.timer?.cancel()
            state.timer = nil
            guard state.running, state.inFlight == nil else { return }
            let current = now
            let delay = state.schedule.nextSyncMilliseconds > current ? state.schedule.nextSyncMilliseconds - current : 0
            state.timer = Task(executorPreference: executor) { [weak self] in
                if delay > 0 {
                    do { try await Task.sleep(for: .milliseconds(delay)) } catch { return }
                }
                self?.fire()
            }
        }
    }

    /// The timer fired: start an exchange unless one is in flight or the sync stopped.
    private func fire() {
        let started = now
        let begun = state.withLock { state -> Bool in
            guard state.running, state.inFlight == nil, state.schedule.nextSyncMilliseconds <= started else { return false }
            state.exchanges += 1
            state.inFlight = Task(executorPreference: executor) { [store] in
                var error: String?
                do { try await store.sync() } catch let failure { error = "\(failure)" }
                guard !Task.isCancelled else {
                    // Cancelled by stop(): not a failure of the hub, and nothing is scheduled.
                    self.state.withLock { $0.inFlight = nil }
                    return
                }
                self.ended(startedMilliseconds: started, error: error, moreToCome: store.needsAnotherHubExchange)
            }
            return true
        }
        if !begun { rearm() }
    }

    private func ended(startedMilliseconds started: UInt64, error: String?, moreToCome: Bool) {
        state.withLock { state in
            state.inFlight = nil
            state.lastError = error
            state.schedule.syncEnded(startedMilliseconds: started, nowMilliseconds: now, succeeded: error == nil,
                                     moreToCome: moreToCome, randomFraction: Double.random(in: 0...1))
        }
        rearm()
    }
}
