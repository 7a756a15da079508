import Foundation

/// How a client retries an exchange that got no answer, or an answer that says "later":
/// exponential backoff with full jitter, so devices that failed together do not retry
/// together.
///
/// The delay before retry *n* (1 for the first) is a random fraction of
/// `min(maximumDelay, initialDelay × multiplierⁿ⁻¹)`, and never less than what the hub
/// asked for in `Retry-After` (up to ``maximumDelay``). The policy is a pure function of
/// its inputs: the randomness is passed in.
public struct RetryPolicy: Hashable, Sendable {
    /// How many times an exchange is tried in all, the first included (at least 1).
    public var maximumAttempts: Int
    /// The ceiling of the first retry's delay.
    public var initialDelay: Duration
    /// The largest delay between two attempts.
    public var maximumDelay: Duration
    /// How much the ceiling grows after each failed retry.
    public var multiplier: Double

    /// Creates a retry policy.
    ///
    /// - Parameters:
    ///   - maximumAttempts: Attempts in all, the first included; values below 1 count as 1.
    ///   - initialDelay: The ceiling of the first retry's delay.
    ///   - maximumDelay: The largest delay between two attempts.
    ///   - multiplier: How much the ceiling grows after each retry (at least 1).
    public init(maximumAttempts: Int = 4, initialDelay: Duration = .milliseconds(250), maximumDelay: Duration = .seconds(10),
                multiplier: Double = 2) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.multiplier = max(1, multiplier)
    }

    /// A policy that tries once and never retries.
    public static let never = RetryPolicy(maximumAttempts: 1)

    /// The delay before retry `retry` (1 for the first retry).
    ///
    /// - Parameters:
    ///   - retry: Which retry this is, from 1.
    ///   - randomFraction: A random number in `0...1` (the jitter).
    ///   - retryAfter: What the hub asked for, if it did.
    public func delay(beforeRetry retry: Int, randomFraction: Double, retryAfter: Duration? = nil) -> Duration {
        let steps = retry <= 1 ? 0.0 : Double(min(retry, 65) - 1)
        let ceiling = min(Self.seconds(maximumDelay), Self.seconds(initialDelay) * pow(multiplier, steps))
        let fraction = randomFraction.isNaN ? 0 : min(1, max(0, randomFraction))
        var delay = ceiling * fraction
        if let retryAfter { delay = max(delay, min(Self.seconds(retryAfter), Self.seconds(maximumDelay))) }
        return Self.duration(seconds: delay)
    }

    /// A duration in seconds, never negative (a negative one counts as zero).
    static func seconds(_ duration: Duration) -> Double {
        max(0, Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    /// The duration of `seconds`, at most about 292 years (`Int64.max` nanoseconds), so a
    /// policy with no practical cap (`.seconds(Int64.max)`) cannot overflow.
    static func duration(seconds: Double) -> Duration {
        let nanoseconds = seconds * 1e9
        guard nanoseconds.isFinite, nanoseconds < 9.2e18 else { return .nanoseconds(Int64.max) }
        return .nanoseconds(Int64(max(0, nanoseconds).rounded()))
    }

}
