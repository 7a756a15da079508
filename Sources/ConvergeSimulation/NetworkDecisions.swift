import Foundation

/// What the network does with one message: deliver it after each of `delaysMs` (none:
/// lost; two: duplicated).
package struct NetworkFate: Hashable, Sendable {
    package var delaysMs: [Int]

    package init(delaysMs: [Int]) { self.delaysMs = delaysMs }
}

/// Which message a network decision is about: its link (sender and receiver) and its
/// number among the messages sent on that link, from 0. Numbering per link keeps a
/// decision on the message it was made for when a shrunk run sends fewer messages on
/// other links (with one number for the whole run, removing one sync renumbered every
/// later message and moved the faults onto others).
package struct MessageID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The sender.
    package var from: SimulationTimeline.Lane
    /// The receiver.
    package var to: SimulationTimeline.Lane
    /// The message's number on its link.
    package var number: Int

    package init(from: SimulationTimeline.Lane, to: SimulationTimeline.Lane, number: Int) {
        self.from = from
        self.to = to
        self.number = number
    }

    /// As a trace writes it: `d0>hub#3`.
    package var description: String { "\(from)>\(to)#\(number)" }

    /// Reads what ``description`` writes; `nil` for anything else.
    package init?(_ text: String) {
        let halves = text.split(separator: "#", omittingEmptySubsequences: false)
        guard halves.count == 2, let number = Int(halves[1]), number >= 0, String(number) == halves[1] else { return nil }
        let ends = halves[0].split(separator: ">", omittingEmptySubsequences: false)
        guard ends.count == 2, let from = SimulationTimeline.Lane(String(ends[0])), let to = SimulationTimeline.Lane(String(ends[1])) else {
            return nil
        }
        self.init(from: from, to: to, number: number)
    }

    package static func < (a: MessageID, b: MessageID) -> Bool {
        (a.from, a.to, a.number) < (b.from, b.to, b.number)
    }
}

/// Where a run's random network decisions come from: the seeded generator, or a
/// recorded trace (a replay needs no PRNG).
package protocol NetworkDecisions {
    /// The fate of message `id`.
    mutating func fate(ofMessage id: MessageID) -> NetworkFate
    /// The fate of message `id` sent after the heal: delivered once after `latencyMs`,
    /// unless a partial heal (`healedLoss`) loses it.
    mutating func healedFate(ofMessage id: MessageID, latencyMs: Int) -> NetworkFate
}

/// Decisions drawn from the seed, per the options' latency, loss, duplication and
/// reordering.
package struct RandomNetworkDecisions: NetworkDecisions {
    private var generator: Xoshiro256StarStar
    private let options: SimulationOptions

    package init(seed: UInt64, options: SimulationOptions) {
        generator = Xoshiro256StarStar(seed: seed ^ 0x4E45_5457_4F52_4B00)
        self.options = options
    }

    package mutating func fate(ofMessage id: MessageID) -> NetworkFate {
        if generator.chance(options.loss) { return NetworkFate(delaysMs: []) }
        var delays = [latency()]
        if generator.chance(options.duplicate) { delays.append(latency()) }
        return NetworkFate(delaysMs: delays)
    }

    package mutating func healedFate(ofMessage id: MessageID, latencyMs: Int) -> NetworkFate {
        // No draw at all without a partial heal, so runs without one keep their decisions.
        if options.healedLoss > 0 && generator.chance(options.healedLoss) { return NetworkFate(delaysMs: []) }
        return NetworkFate(delaysMs: [latencyMs])
    }

    private mutating func latency() -> Int {
        let low = options.minLatencyMs, high = max(options.maxLatencyMs, options.minLatencyMs)
        var delay: Int
        if options.latency == .exponential {
            let mean = Double(max(high - low, 1))
            delay = low + Int((-mean * log1p(-generator.nextUnitDouble())).rounded())
        } else {
            delay = generator.next(in: low...high)
        }
        if generator.chance(options.reorder) { delay += generator.next(in: 0...(10 * max(high, 1))) }
        return delay
    }
}

/// Decisions read back from a trace; a message the trace has no decision for is
/// delivered once after the minimum latency (what shrinking leaves when it drops a fault).
package struct RecordedNetworkDecisions: NetworkDecisions {
    package var fates: [MessageID: NetworkFate]
    package let defaultDelayMs: Int

    package init(fates: [MessageID: NetworkFate], defaultDelayMs: Int) {
        self.fates = fates
        self.defaultDelayMs = defaultDelayMs
    }

    package mutating func fate(ofMessage id: MessageID) -> NetworkFate {
        fates[id] ?? NetworkFate(delaysMs: [defaultDelayMs])
    }

    package mutating func healedFate(ofMessage id: MessageID, latencyMs: Int) -> NetworkFate {
        fates[id] ?? NetworkFate(delaysMs: [latencyMs])
    }
}
