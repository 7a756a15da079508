/// When an automatic sync exchanges next, as a pure state machine: time (milliseconds of
/// any monotonic clock) and randomness are inputs, so every decision can be tested
/// without waiting.
///
/// - At start, and when the network comes back, at once (after a failure, the backoff is
///   forgotten).
/// - After a local write: once writes pause for ``Configuration/debounce``, or at most
///   ``Configuration/maximumDebounce`` after the first write not yet synced.
/// - After a sync that succeeded: again at once if the hub has more to send (pages),
///   otherwise after ``Configuration/interval`` to take other devices' changes.
/// - After a sync that failed: after an exponential backoff with jitter
///   (``Configuration/retry``), which local writes do not cut short.
public struct SyncSchedule: Hashable, Sendable {
    /// The intervals of an automatic sync.
    public struct Configuration: Hashable, Sendable {
        /// How long writes must pause before they are pushed.
        public var debounce: Duration
        /// The longest a local write waits to be pushed while writes keep coming.
        public var maximumDebounce: Duration
        /// How often the store asks the hub for other devices' changes.
        public var interval: Duration
        /// How the next sync is delayed after one failed (its attempts are not used: the
        /// schedule retries forever).
        public var retry: RetryPolicy

        /// Creates the intervals of an automatic sync.
        ///
        /// - Parameters:
        ///   - debounce: How long writes must pause before they are pushed.
        ///   - maximumDebounce: The longest a write waits while writes keep coming.
        ///   - interval: How often to ask the hub for other devices' changes.
        ///   - retry: The backoff after a failed sync.
        public init(debounce: Duration = .milliseconds(500), maximumDebounce: Duration = .seconds(5),
                    interval: Duration = .seconds(60),
                    retry: RetryPolicy = RetryPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(300))) {
            self.debounce = max(debounce, .zero)
            self.maximumDebounce = max(self.debounce, maximumDebounce)
            // Never a tight loop: at least a tenth of a second between periodic syncs and
            // between retries.
            self.interval = max(interval, Self.shortestWait)
            self.retry = retry
        }

        /// The shortest period, and the shortest wait after a failure.
        public static let shortestWait = Duration.milliseconds(100)
    }

    /// The intervals.
    public let configuration: Configuration
    /// When the next sync is due.
    public private(set) var nextSyncMilliseconds: UInt64
    /// Syncs that failed in a row.
    public private(set) var consecutiveFailures = 0
    /// When the first local write not yet pushed happened, and the latest.
    private var pendingWrites: PendingWrites?

    private struct PendingWrites: Hashable, Sendable {
        var first: UInt64
        var latest: UInt64
    }
    /// When the schedule allows the next sync after failures.
    private var backoffUntil: UInt64 = 0
    /// When the next sync is due if no local write comes.
    private var periodicDue: UInt64

    /// A schedule whose first sync is due at `now`.
    public init(configuration: Configuration = Configuration(), nowMilliseconds now: UInt64) {
        self.configuration = configuration
        nextSyncMilliseconds = now
        periodicDue = now
    }

    /// A local write happened at `now`.
    public mutating func localWrite(nowMilliseconds now: UInt64) {
        pendingWrites = PendingWrites(first: pendingWrites?.first ?? now, latest: now)
        reschedule()
    }

    /// The network became available at `now`: sync at once, whatever the backoff.
    public mutating func networkBecameAvailable(nowMilliseconds now: UInt64) {
        backoffUntil = 0
        consecutiveFailures = 0
        periodicDue = now
        reschedule()
    }

    /// A sync that started at `started` ended at `now`.
    ///
    /// - Parameters:
    ///   - started: When the sync computed its request: writes after it were not pushed.
    ///   - now: When it ended.
    ///   - succeeded: Whether it exchanged.
    ///   - moreToCome: The hub has more to send (or wants an acknowledgement) at once.
    ///   - randomFraction: A random number in `0...1`, the backoff's jitter.
    public mutating func syncEnded(startedMilliseconds started: UInt64, nowMilliseconds now: UInt64, succeeded: Bool,
                                   moreToCome: Bool = false, randomFraction: Double = 0.5) {
        if succeeded {
            consecutiveFailures = 0
            backoffUntil = 0
            if let pending = pendingWrites {
                // Writes before the sync computed its request were pushed; later ones wait
                // from no earlier than then.
                pendingWrites = pending.latest < started ? nil : PendingWrites(first: max(pending.first, started), latest: pending.latest)
            }
            periodicDue = moreToCome ? now : now.addingSaturating(Self.milliseconds(configuration.interval))
        } else {
            consecutiveFailures += 1
            let delay = max(configuration.retry.delay(beforeRetry: consecutiveFailures, randomFraction: randomFraction),
                            Configuration.shortestWait)
            backoffUntil = now.addingSaturating(Self.milliseconds(delay))
            periodicDue = backoffUntil
        }
        reschedule()
    }

    /// The next sync: the periodic one, or the pushes of pending writes if sooner, never
    /// before the backoff ends.
    private mutating func reschedule() {
        var next = periodicDue
        if let pending = pendingWrites {
            let debounced = min(pending.latest.addingSaturating(Self.milliseconds(configuration.debounce)),
                                pending.first.addingSaturating(Self.milliseconds(configuration.maximumDebounce)))
            next = min(next, debounced)
        }
        nextSyncMilliseconds = max(next, backoffUntil)
    }

    /// Whole milliseconds of `duration`: never negative, and at most `UInt64.max / 4`, so
    /// that adding it to any clock reading below that cannot overflow.
    static func milliseconds(_ duration: Duration) -> UInt64 {
        let value = (RetryPolicy.seconds(duration) * 1_000).rounded()
        guard value.isFinite, value < Double(UInt64.max / 4) else { return UInt64.max / 4 }
        return UInt64(max(0, value))
    }
}

/// Saturating addition for clock readings: a sum past `UInt64.max` is `UInt64.max`.
private extension UInt64 {
    func addingSaturating(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
