import ConvergeSimulation
import Foundation

/// The per-seed figures `converge-sim compare` reports for each policy, their means with
/// 95 % confidence intervals, and the differences between policies paired on the same
/// seeds (the same histories), which are far tighter than the intervals of the means.
struct PolicyMetric: Sendable {
    /// The column name in the table.
    var name: String
    /// The column name in CSV: lowercase letters, digits and underscores.
    var csvName: String {
        String(name.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }
    /// The figure of one run, or `nil` where it does not apply (no write propagated).
    var value: @Sendable (SimulationMetrics) -> Double?

    static let all: [PolicyMetric] = [
        PolicyMetric(name: "conflicts") { Double($0.policy.conflictsResolvedByWrites) },
        PolicyMetric(name: "hidden updates") { Double($0.policy.lostUpdates) },
        PolicyMetric(name: "hidden later writes") { Double($0.policy.lostUpdatesLaterInTrueTime) },
        PolicyMetric(name: "value-remove conflicts") { Double($0.policy.valueRemoveConflicts) },
        PolicyMetric(name: "siblings per key") { $0.state.siblingsPerKey },
        PolicyMetric(name: "max siblings") { Double($0.state.maxSiblings) },
        PolicyMetric(name: "p50 propagation ms") { $0.convergence.propagationMs.p50.map(Double.init) },
        PolicyMetric(name: "liveness ms") { $0.convergence.livenessMs.map(Double.init) },
        PolicyMetric(name: "messages") { Double($0.network.messages) },
        PolicyMetric(name: "bytes") { Double($0.network.bytes) },
        PolicyMetric(name: "metadata B/key") { $0.state.metadataBytesPerKey },
    ]
}

/// A sample's mean and the half-width of its 95 % confidence interval (Student's t).
struct MeanInterval {
    var mean: Double
    var halfWidth: Double
    var count: Int

    init?(_ values: [Double]) {
        guard !values.isEmpty else { return nil }
        let count = values.count, mean = values.reduce(0, +) / Double(values.count)
        self.count = count
        self.mean = mean
        guard count > 1 else {
            halfWidth = .nan
            return
        }
        let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(count - 1)
        halfWidth = Self.studentT975(degreesOfFreedom: count - 1) * (variance / Double(count)).squareRoot()
    }

    /// The 97.5th percentile of Student's t distribution (two-sided 95 %).
    static func studentT975(degreesOfFreedom df: Int) -> Double {
        let table: [Double] = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                               2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                               2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
        if df <= table.count { return table[df - 1] }
        if df <= 60 { return 2.000 }
        if df <= 120 { return 1.980 }
        return 1.960
    }

    /// "12.5 ± 0.8" (the interval left out for a single value), to three significant
    /// digits or so: what a confidence interval can carry.
    var text: String {
        halfWidth.isNaN ? Self.short(mean) : "\(Self.short(mean)) ± \(Self.short(halfWidth))"
    }

    static func short(_ value: Double) -> String {
        let magnitude = abs(value)
        if magnitude >= 100 || value == value.rounded() { return Report.grouped(Int(value.rounded())) }
        return String(format: magnitude >= 10 ? "%.1f" : "%.2f", value)
    }
}

extension MeanInterval {
    /// The paired differences `b - a` on the seeds where both have a value.
    init?(pairedDifferences a: [UInt64: Double], _ b: [UInt64: Double]) {
        self.init(a.keys.sorted().compactMap { seed in b[seed].map { $0 - a[seed]! } })
    }
}
