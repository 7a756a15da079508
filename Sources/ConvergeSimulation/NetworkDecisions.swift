import Foundation

/// What the network does with one message: deliver it after each of `delaysMs` (none:
/// lost; two: duplicated).
package struct NetworkFate: Hashable, Sendable {
    package var delaysMs: [Int]

    package init(delaysMs: [Int]) { self.delaysMs = delaysMs }
}

/// Where a run's random network decisions come from: the seeded generator, or a
/// recorded trace (a replay needs no PRNG).
package protocol NetworkDecisions {
    /// The fate of message number `id` (numbered in the order they are sent).
    mutating func fate(ofMessage id: Int) -> NetworkFate
    /// The fate of message number `id` sent after the heal: delivered once after
    /// `latencyMs`, unless a partial heal (`healedLoss`) loses it.
    mutating func healedFate(ofMessage id: Int, latencyMs: Int) -> NetworkFate
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

    package mutating func fate(ofMessage id: Int) -> NetworkFate {
        if generator.chance(options.loss) { return NetworkFate(delaysMs: []) }
        var delays = [latency()]
        if generator.chance(options.duplicate) { delays.append(latency()) }
        return NetworkFate(delaysMs: delays)
    }

    package mutating func healedFate(ofMessage id: Int, latencyMs: Int) -> NetworkFate {
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
    package var fates: [Int: NetworkFate]
    package let defaultDelayMs: Int

    package init(fates: [Int: NetworkFate], defaultDelayMs: Int) {
        self.fates = fates
        self.defaultDelayMs = defaultDelayMs
    }

    package mutating func fate(ofMessage id: Int) -> NetworkFate {
        fates[id] ?? NetworkFate(delaysMs: [defaultDelayMs])
    }

    package mutating func healedFate(ofMessage id: Int, latencyMs: Int) -> NetworkFate {
        fates[id] ?? NetworkFate(delaysMs: [latencyMs])
    }
}
