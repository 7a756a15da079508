import Foundation
import Synchronization

/// The operating system's real-time clock.
///
/// This is the one place where Converge reads ambient time, and only because a store
/// needs a default: tests and the simulator inject a ``ManualClock`` or their own
/// ``PhysicalClock`` instead.
public struct SystemClock: PhysicalClock {
    /// Creates the system clock.
    public init() {}

    public func nowMilliseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(max(0, now.tv_sec)) * 1_000 + UInt64(max(0, now.tv_nsec)) / 1_000_000
    }
}

/// A clock that moves only when told to: for tests that need to control time.
public final class ManualClock: PhysicalClock {
    private let milliseconds: Mutex<UInt64>

    /// Creates a clock reading `startMilliseconds`.
    public init(startMilliseconds: UInt64 = 1_700_000_000_000) {
        milliseconds = Mutex(startMilliseconds)
    }

    public func nowMilliseconds() -> UInt64 { milliseconds.withLock { $0 } }

    /// Moves the clock forward by `deltaMilliseconds`.
    public func advance(byMilliseconds deltaMilliseconds: UInt64) {
        milliseconds.withLock { $0 += deltaMilliseconds }
    }

    /// Sets the clock, which may move it backwards (as a real clock can be reset).
    public func set(milliseconds newValue: UInt64) {
        milliseconds.withLock { $0 = newValue }
    }
}
