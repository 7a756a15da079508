import Foundation

/// Chooses keys uniformly or by Zipf popularity (key 0 the most popular), by inverting a
/// precomputed cumulative distribution.
struct KeyChooser {
    let count: Int
    let cumulative: [Double]?

    init(options: SimulationOptions) {
        count = options.keys
        guard options.keyDistribution == .zipf else { cumulative = nil; return }
        var sums: [Double] = []
        sums.reserveCapacity(count)
        var total = 0.0
        for rank in 1...count {
            total += 1 / pow(Double(rank), options.zipfExponent)
            sums.append(total)
        }
        cumulative = sums.map { $0 / total }
    }

    func next(_ generator: inout Xoshiro256StarStar) -> Int {
        guard let cumulative else { return generator.next(below: count) }
        let u = generator.nextUnitDouble()
        var (low, high) = (0, cumulative.count - 1)
        while low < high {
            let mid = (low + high) / 2
            if cumulative[mid] < u { low = mid + 1 } else { high = mid }
        }
        return low
    }
}

/// The key string of key number `index`.
func keyName(_ index: Int) -> String { "k\(index)" }
