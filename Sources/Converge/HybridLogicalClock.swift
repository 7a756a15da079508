/// A hybrid logical timestamp: wall-clock milliseconds plus a logical counter.
///
/// Timestamps order by wall time, then logical counter. They order concurrent writes for
/// last-writer-wins; causality itself is tracked by dots and version vectors.
public struct HybridTimestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970 as the writer's physical clock read them (possibly
    /// advanced by timestamps received from others).
    public var wallMilliseconds: UInt64
    /// Distinguishes events within the same millisecond.
    public var logical: UInt32

    /// Creates a timestamp from its wall-clock milliseconds and logical counter.
    public init(wallMilliseconds: UInt64, logical: UInt32) {
        self.wallMilliseconds = wallMilliseconds
        self.logical = logical
    }

    /// The timestamp before every other.
    public static let zero = HybridTimestamp(wallMilliseconds: 0, logical: 0)

    /// The latest wall time a timestamp may hold: the last millisecond of the year 9999.
    ///
    /// Decoding refuses a timestamp past it (and a store merging a delta does too), so no
    /// clock ever comes near the end of its range.
    public static let maximumWallMilliseconds: UInt64 = 253_402_300_799_999

    public static func < (lhs: HybridTimestamp, rhs: HybridTimestamp) -> Bool {
        (lhs.wallMilliseconds, lhs.logical) < (rhs.wallMilliseconds, rhs.logical)
    }

    public var description: String { "\(wallMilliseconds).\(logical)" }
}

/// A source of physical time in milliseconds since 1970.
///
/// The core never reads the wall clock itself: stores take one of these, so tests and the
/// simulator can drive time (and skew it) deterministically.
public protocol PhysicalClock: Sendable {
    /// The current physical time in milliseconds since 1970.
    func nowMilliseconds() -> UInt64
}

/// A hybrid logical clock (Kulkarni et al., 2014).
///
/// Ticked on local writes, advanced on receipt of remote timestamps, so that a write is
/// always stamped after everything its replica has seen, even if the physical clock lags.
public struct HybridLogicalClock: Sendable, Hashable {
    /// The last timestamp issued or observed.
    public private(set) var latest: HybridTimestamp

    /// Creates a clock that has issued or observed `latest` (the one a storage recorded),
    /// so that it never goes back after a restart.
    public init(latest: HybridTimestamp = .zero) {
        self.latest = latest
    }

    /// Issues a timestamp for a local event at physical time `nowMilliseconds`.
    public mutating func tick(nowMilliseconds: UInt64) -> HybridTimestamp {
        if nowMilliseconds > latest.wallMilliseconds {
            latest = HybridTimestamp(wallMilliseconds: nowMilliseconds, logical: 0)
        } else if latest.logical == .max && latest.wallMilliseconds == .max {
            // The end of time (only a physical clock reading UInt64.max gets here): stay
            // there rather than trap.
        } else if latest.logical == .max {
            // Keep monotonicity without overflowing: borrow the next millisecond.
            latest = HybridTimestamp(wallMilliseconds: latest.wallMilliseconds + 1, logical: 0)
        } else {
            latest.logical += 1
        }
        return latest
    }

    /// Advances the clock past a timestamp received from another replica.
    public mutating func observe(_ remote: HybridTimestamp) {
        if remote > latest { latest = remote }
    }
}
