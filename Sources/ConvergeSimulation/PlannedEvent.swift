/// One input of a run, at a virtual time: a workload operation or a fault. A run's plan
/// is drawn from its seed up front; a trace records it, so a replay needs no PRNG.
package enum PlannedEvent: Hashable, Sendable {
    case set(device: Int, key: Int, valueBytes: Int)
    case remove(device: Int, key: Int)
    case synchronize(device: Int)
    case read(device: Int, key: Int)
    /// `devices` are cut off from everything else (the hub and the other devices); with
    /// `oneWay`, only what they send is lost.
    case partition(devices: [Int], oneWay: Bool, durationMs: Int)
    case offline(device: Int, durationMs: Int)
    case hubOutage(durationMs: Int)
    /// The hub crashes (what it held only in memory is lost) and restarts from its durable
    /// state after `downMs`.
    case hubCrash(downMs: Int)
    /// A copy of the hub's durable state is taken (a backup), for a later ``hubRestore(downMs:)``.
    case hubBackup
    /// The hub loses its durable state and restarts, after `downMs`, from the last backup
    /// (from nothing if none was taken): an older copy put back, as an operator restoring a
    /// backup or rolling a database back does.
    case hubRestore(downMs: Int)
    /// The device crashes (what its disk has not made durable is lost) and restarts later.
    case crash(device: Int, downMs: Int)
    /// The device switches to the second account, and back after `durationMs`.
    case switchAccount(device: Int, durationMs: Int)
    /// The device's clock: a fixed offset and a drift.
    case clock(device: Int, offsetMs: Int, driftPpm: Int)
    /// The device's disk is full for `durationMs`: every save fails.
    case diskFull(device: Int, durationMs: Int)
    /// The device's clock jumps by `byMs` (negative: backwards) and stays so.
    case clockJump(device: Int, byMs: Int)
    /// A copy of what the device's disk has made durable is taken (a backup), for a later
    /// ``deviceRestore(device:downMs:)``.
    case deviceBackup(device: Int)
    /// The device powers off, and restarts after `downMs` from its last backup (from an
    /// empty disk if none was taken) instead of from its disk: a user restoring a phone from
    /// an older backup. Its store then issues counters it already issued.
    case deviceRestore(device: Int, downMs: Int)
    /// Device `to` powers off, and restarts after `downMs` from a copy of what device
    /// `from`'s disk has made durable, under `from`'s replica ID: a user restoring one phone's
    /// backup onto a second phone. Two devices then write under one replica ID.
    case deviceClone(from: Int, to: Int, downMs: Int)

    var isFault: Bool {
        switch self {
        case .set, .remove, .synchronize, .read, .clock, .hubBackup, .deviceBackup: return false
        default: return true
        }
    }
}

/// A planned event at its virtual time.
package struct TimedEvent: Hashable, Sendable {
    package var timeMs: Int
    package var event: PlannedEvent

    package init(timeMs: Int, event: PlannedEvent) {
        self.timeMs = timeMs
        self.event = event
    }
}
