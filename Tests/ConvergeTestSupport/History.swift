import Converge
import ConvergeSimulation

/// One step of a random multi-replica history.
///
/// Messages model an unreliable network: a ``send(from:to:)`` puts a delta in flight,
/// computed for the version vector the receiver last *reported* to the sender (so it may
/// be stale, never guessed); in-flight messages are then delivered in any order,
/// duplicated or dropped.
public enum HistoryOperation: Hashable, Sendable, CustomStringConvertible {
    case set(replica: Int, key: String, value: Value)
    case remove(replica: Int, key: String)
    /// Physical time moves on for every replica.
    case tick(milliseconds: UInt64)
    /// `from` tells `to` its current context.
    case report(from: Int, to: Int)
    case send(from: Int, to: Int)
    /// Delivers (and removes) in-flight message `message % count`.
    case deliver(message: Int)
    case duplicate(message: Int)
    case drop(message: Int)
    /// Every replica drops tombstones below the stable frontier of all replicas' contexts.
    case collect

    public var description: String {
        switch self {
        case .set(let r, let key, let value): return "r\(r).set(\(key), \(value))"
        case .remove(let r, let key): return "r\(r).remove(\(key))"
        case .tick(let ms): return "tick(\(ms)ms)"
        case .report(let from, let to): return "r\(from) reports to r\(to)"
        case .send(let from, let to): return "r\(from) sends delta to r\(to)"
        case .deliver(let m): return "deliver #\(m)"
        case .duplicate(let m): return "duplicate #\(m)"
        case .drop(let m): return "drop #\(m)"
        case .collect: return "collect tombstones"
        }
    }
}

/// A random history: how many replicas, their clock skews, and the operations.
public struct History: Hashable, Sendable, CustomStringConvertible {
    public var replicaCount: Int
    public var skewMilliseconds: [UInt64]
    public var operations: [HistoryOperation]

    public init(replicaCount: Int, skewMilliseconds: [UInt64], operations: [HistoryOperation]) {
        self.replicaCount = replicaCount
        self.skewMilliseconds = skewMilliseconds
        self.operations = operations
    }

    public static let keys = ["a", "b", "c", "d"]

    /// The replica IDs, `r0`, `r1`, ….
    public static func replicaID(_ index: Int) -> ReplicaID { ReplicaID("r\(index)")! }

    /// Draws a history of `replicas` replicas and up to `maximumOperations` operations.
    package static func generate(
        using generator: inout Xoshiro256StarStar, replicas: ClosedRange<Int> = 2...4,
        maximumOperations: Int = 40, network: Bool = true, collection: Bool = false
    ) -> History {
        let count = generator.next(in: replicas)
        let skews = (0..<count).map { _ in UInt64(generator.next(below: 4)) }
        var operations: [HistoryOperation] = []
        for _ in 0..<generator.next(in: 1...maximumOperations) {
            let r = generator.next(below: count)
            let other = (r + 1 + generator.next(below: max(1, count - 1))) % count
            let roll = generator.next(below: 100)
            switch roll {
            case 0..<35:
                let value: Value = generator.chance(0.5) ? .integer(Int64(generator.next(below: 10)))
                    : .string(String(repeating: "x", count: generator.next(below: 4)))
                operations.append(.set(replica: r, key: generator.element(of: keys), value: value))
            case 35..<50: operations.append(.remove(replica: r, key: generator.element(of: keys)))
            case 50..<58: operations.append(.tick(milliseconds: UInt64(generator.next(below: 3))))
            case 58..<68: operations.append(.report(from: r, to: other))
            case 68..<80: operations.append(.send(from: r, to: other))
            case 80..<92: operations.append(network ? .deliver(message: generator.next(below: 8)) : .send(from: r, to: other))
            case 92..<96: operations.append(network ? .duplicate(message: generator.next(below: 8)) : .report(from: r, to: other))
            default:
                if collection && generator.chance(0.5) {
                    operations.append(.collect)
                } else {
                    operations.append(network ? .drop(message: generator.next(below: 8)) : .tick(milliseconds: 1))
                }
            }
        }
        return History(replicaCount: count, skewMilliseconds: skews, operations: operations)
    }

    /// Shrink candidates: fewer operations first, then fewer replicas is left to the
    /// operations (an unused replica costs nothing).
    public func shrunk() -> [History] {
        shrinkList(operations).map { History(replicaCount: replicaCount, skewMilliseconds: skewMilliseconds, operations: $0) }
    }

    public var description: String {
        "\(replicaCount) replicas, skews \(skewMilliseconds) ms, \(operations.count) operations:\n"
            + operations.enumerated().map { "  \($0.offset): \($0.element)" }.joined(separator: "\n")
    }
}

/// The map operations a history runs with: the real ones, or a deliberately broken
/// variant that a property must catch.
public struct MapAlgebra: Sendable {
    public var join: @Sendable (ReplicatedMap, ReplicatedMap) -> ReplicatedMap
    public var delta: @Sendable (_ sender: ReplicatedMap, _ reportedByPeer: VersionVector) -> ReplicatedMap.Delta
    public var apply: @Sendable (inout ReplicatedMap, ReplicatedMap.Delta) -> Void
    /// The frontier below which tombstones are collected, given a tracker and every
    /// replica's context (as its acknowledgement).
    public var stableFrontier: @Sendable (inout StabilityTracker, [ReplicaID: VersionVector]) -> VersionVector

    public init(
        join: @escaping @Sendable (ReplicatedMap, ReplicatedMap) -> ReplicatedMap = { var a = $0; a.join($1); return a },
        delta: @escaping @Sendable (ReplicatedMap, VersionVector) -> ReplicatedMap.Delta = { $0.delta(for: $1) },
        apply: @escaping @Sendable (inout ReplicatedMap, ReplicatedMap.Delta) -> Void = { $0.apply($1) },
        stableFrontier: @escaping @Sendable (inout StabilityTracker, [ReplicaID: VersionVector]) -> VersionVector = {
            $0.observe(acknowledged: $1)
        }
    ) {
        self.join = join
        self.delta = delta
        self.apply = apply
        self.stableFrontier = stableFrontier
    }

    /// The real operations.
    public static let correct = MapAlgebra()
}

/// Runs a ``History`` on plain ``ReplicatedMap``s.
public struct HistoryRun {
    public private(set) var replicas: [ReplicatedMap]
    public private(set) var clocks: [HybridLogicalClock]
    /// `reported[a][b]`: the context replica `b` last reported to replica `a`.
    public private(set) var reported: [[VersionVector]]
    public private(set) var inFlight: [(to: Int, delta: ReplicatedMap.Delta)] = []
    /// Every context each replica has had, oldest first (for stale-vector tests).
    public private(set) var pastContexts: [[VersionVector]]
    public private(set) var tombstonesCollected = 0
    private var stability = StabilityTracker()
    private var nowMilliseconds: UInt64 = 1_000
    private let skews: [UInt64]
    private let algebra: MapAlgebra
    private let skipCollection: Bool

    public init(_ history: History, algebra: MapAlgebra = .correct, skipCollection: Bool = false) {
        let n = history.replicaCount
        replicas = Array(repeating: ReplicatedMap(), count: n)
        clocks = Array(repeating: HybridLogicalClock(), count: n)
        reported = Array(repeating: Array(repeating: VersionVector(), count: n), count: n)
        pastContexts = Array(repeating: [VersionVector()], count: n)
        skews = history.skewMilliseconds
        self.algebra = algebra
        self.skipCollection = skipCollection
        for operation in history.operations { run(operation) }
    }

    private mutating func stamp(_ r: Int) -> HybridTimestamp {
        clocks[r].tick(nowMilliseconds: nowMilliseconds + skews[r])
    }

    private mutating func receive(_ delta: ReplicatedMap.Delta, at r: Int) {
        for siblings in delta.entries.values { for s in siblings { clocks[r].observe(s.timestamp) } }
        algebra.apply(&replicas[r], delta)
        pastContexts[r].append(replicas[r].context)
    }

    public mutating func run(_ operation: HistoryOperation) {
        switch operation {
        case .set(let r, let key, let value):
            replicas[r].write(value, forKey: key, replica: History.replicaID(r), timestamp: stamp(r))
            pastContexts[r].append(replicas[r].context)
        case .remove(let r, let key):
            replicas[r].write(nil, forKey: key, replica: History.replicaID(r), timestamp: stamp(r))
            pastContexts[r].append(replicas[r].context)
        case .tick(let ms):
            nowMilliseconds += ms
        case .report(let from, let to):
            reported[to][from] = replicas[from].context
        case .send(let from, let to):
            inFlight.append((to, algebra.delta(replicas[from], reported[from][to])))
        case .deliver(let m):
            guard !inFlight.isEmpty else { return }
            let message = inFlight.remove(at: m % inFlight.count)
            receive(message.delta, at: message.to)
        case .duplicate(let m):
            guard !inFlight.isEmpty else { return }
            inFlight.append(inFlight[m % inFlight.count])
        case .drop(let m):
            guard !inFlight.isEmpty else { return }
            inFlight.remove(at: m % inFlight.count)
        case .collect:
            guard !skipCollection else { return }
            var acknowledged: [ReplicaID: VersionVector] = [:]
            for r in replicas.indices { acknowledged[History.replicaID(r)] = replicas[r].context }
            let frontier = algebra.stableFrontier(&stability, acknowledged)
            for r in replicas.indices { tombstonesCollected += replicas[r].collectTombstones(stableFrontier: frontier) }
        }
    }

    /// Heals the network: every replica reports to every other and receives a delta for
    /// what it reported, twice over (enough for any pair to hear of every write).
    public mutating func heal() {
        for _ in 0..<2 {
            for to in replicas.indices {
                for from in replicas.indices where from != to {
                    reported[from][to] = replicas[to].context
                    receive(algebra.delta(replicas[from], reported[from][to]), at: to)
                }
            }
        }
    }
}

/// Every built-in policy, and two custom ones, for "under every policy" properties.
public let everyPolicy: [MergePolicy] = [
    .lastWriterWins, .addWins, .removeWins, .multiValue,
    .replicaPriority([History.replicaID(2), History.replicaID(0)]),
    .custom("max-number") { siblings in
        siblings.compactMap(\.value).max { $0.doubleConversion < $1.doubleConversion }
    },
]

/// The visible value of every key in `state` under `policy`, in key order.
public func visibleValues(of state: ReplicatedMap, policy: MergePolicy) -> [String: Value] {
    var result: [String: Value] = [:]
    for key in state.entries.keys {
        if let value = state.visibleValue(forKey: key, policy: policy) { result[key] = value }
    }
    return result
}
