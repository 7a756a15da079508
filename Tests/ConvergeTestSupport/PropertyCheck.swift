import ConvergeSimulation
import Foundation

/// How many cases property tests run, and which seed to replay.
///
/// `CONVERGE_PROPERTY_SCALE` multiplies every property's case count (CI runs the
/// defaults, which are thousands of cases per property); `CONVERGE_PROPERTY_SEED` runs
/// exactly one case, the one a failure printed.
public enum PropertyConfiguration {
    public static var scale: Int {
        ProcessInfo.processInfo.environment["CONVERGE_PROPERTY_SCALE"].flatMap(Int.init).map { max(1, $0) } ?? 1
    }

    public static var replaySeed: UInt64? {
        ProcessInfo.processInfo.environment["CONVERGE_PROPERTY_SEED"].flatMap { UInt64($0) }
    }
}

/// A property that failed: the case's seed, the input as generated and as shrunk, and
/// the command that replays it.
public struct PropertyFailure: Error, CustomStringConvertible {
    public var property: String
    public var seed: UInt64
    public var casesRun: Int
    public var message: String
    public var original: String
    public var shrunk: String
    public var shrinkSteps: Int

    public var reproduceCommand: String {
        "CONVERGE_PROPERTY_SEED=\(seed) swift test --filter '\(property)'"
    }

    public var description: String {
        """
        property "\(property)" failed after \(casesRun) case(s), seed \(seed): \(message)
        shrunk input (\(shrinkSteps) shrink steps):
        \(shrunk)
        original input:
        \(original)
        reproduce with: \(reproduceCommand)
        """
    }
}

/// Checks `property` on `cases` inputs drawn from `generate`, each from its own seed.
///
/// On a failure, greedily shrinks the input (the first candidate from `shrink` that still
/// fails, repeatedly) and returns the failure; returns `nil` if every case held.
///
/// - Parameters:
///   - name: The property's name; the test filter in the reproduce command.
///   - property: Returns `nil` when the property holds, or a message saying how it failed.
package func checkProperty<Input>(
    _ name: String,
    cases: Int,
    baseSeed: UInt64 = 0x5EED_C0DE,
    generate: (inout Xoshiro256StarStar) -> Input,
    shrink: (Input) -> [Input] = { _ in [] },
    describe: (Input) -> String = { "\($0)" },
    property: (Input) -> String?
) -> PropertyFailure? {
    var seeds = SplitMix64(seed: baseSeed)
    let seedsToRun: [UInt64] = PropertyConfiguration.replaySeed.map { [$0] }
        ?? (0..<(cases * PropertyConfiguration.scale)).map { _ in seeds.next() }
    for (index, seed) in seedsToRun.enumerated() {
        var generator = Xoshiro256StarStar(seed: seed)
        let input = generate(&generator)
        guard let message = property(input) else { continue }
        var smallest = input
        var smallestMessage = message
        var steps = 0
        var improved = true
        while improved && steps < 500 {
            improved = false
            for candidate in shrink(smallest) {
                if let candidateMessage = property(candidate) {
                    smallest = candidate
                    smallestMessage = candidateMessage
                    steps += 1
                    improved = true
                    break
                }
            }
        }
        return PropertyFailure(property: name, seed: seed, casesRun: index + 1, message: smallestMessage,
                               original: describe(input), shrunk: describe(smallest), shrinkSteps: steps)
    }
    return nil
}

/// Shrink candidates for a list: without halves, then quarters, … then single elements
/// (delta debugging's complement step), largest removals first.
public func shrinkList<Element>(_ list: [Element]) -> [[Element]] {
    var candidates: [[Element]] = []
    var chunk = list.count / 2
    while chunk >= 1 {
        var start = 0
        while start < list.count {
            var smaller = list
            smaller.removeSubrange(start..<min(start + chunk, list.count))
            candidates.append(smaller)
            start += chunk
        }
        chunk /= 2
    }
    return candidates
}
