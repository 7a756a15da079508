import Converge

/// Every local write of a run, for the metrics (propagation, resolutions) and the durable
/// flags; the ``ReferenceModel`` holds the same writes for the checkers.
struct WriteLedger {
    struct Write {
        var account: AccountID
        var device: Int
        var key: String
        var dot: Dot
        var hasValue: Bool
        var timeMs: Int
        /// On disk: acknowledged (the checker only holds the run to durable writes).
        var durable = false
        var forgotten = false
        var seenBy: UInt64 = 0
    }

    struct WriteKey: Hashable {
        var account: AccountID
        var dot: Dot
    }

    var writes: [Write] = []
    var index: [WriteKey: Int] = [:]
    var superseded: Set<WriteKey> = []

    mutating func record(account: AccountID, device: Int, key: String, dot: Dot, hasValue: Bool, timeMs: Int) -> Int {
        writes.append(Write(account: account, device: device, key: key, dot: dot, hasValue: hasValue, timeMs: timeMs,
                            seenBy: 1 << UInt64(device % 64)))
        index[WriteKey(account: account, dot: dot)] = writes.count - 1
        return writes.count - 1
    }

    /// A write lost in a crash before it was durable: never acknowledged, and its dot
    /// will be reused.
    mutating func forget(_ i: Int) {
        writes[i].forgotten = true
        let key = WriteKey(account: writes[i].account, dot: writes[i].dot)
        if index[key] == i { index[key] = nil }
    }

    /// A write forgotten by mistake of timing: a disk restored from a backup holds it again.
    mutating func revive(_ i: Int) {
        writes[i].forgotten = false
        index[WriteKey(account: writes[i].account, dot: writes[i].dot)] = i
    }

    mutating func markSuperseded(_ dots: [Dot], account: AccountID) {
        for dot in dots { superseded.insert(WriteKey(account: account, dot: dot)) }
    }

    func write(_ dot: Dot, account: AccountID) -> Write? {
        index[WriteKey(account: account, dot: dot)].map { writes[$0] }
    }

    /// Notes that device `d` holds `dot` (of the default account); returns the write's
    /// propagation latency once every device holds it.
    mutating func observe(_ dot: Dot, by d: Int, deviceCount: Int, now: Int) -> Int? {
        guard let i = index[WriteKey(account: .default, dot: dot)] else { return nil }
        let all: UInt64 = deviceCount >= 64 ? .max : (1 << UInt64(deviceCount)) - 1
        let before = writes[i].seenBy
        writes[i].seenBy |= 1 << UInt64(d % 64)
        return before != all && writes[i].seenBy == all ? now - writes[i].timeMs : nil
    }
}
