@testable import Converge
import ConvergeSimulation
import ConvergeTestSupport
import Testing

/// `delta(for:)` walks an index of writes by replica and counter; these compare it with the
/// scan of every key it replaced, on random histories and on larger maps that churn (many
/// overwrites, so the index rebuilds itself; joins of whole states, whose writes arrive out
/// of counter order; collection; decoding; contexts of every age). The keys that tombstone
/// collection may drop, kept in an index too, are compared with a scan the same way.
@Suite("Replicated map: a delta through the dot index equals a scan of every key")
struct DotIndexTests {
    /// The difference between the delta through the index and the scan for `peer`, if any.
    static func mismatch(_ map: ReplicatedMap, _ peer: VersionVector) -> String? {
        if let violation = map._dotIndexViolation() { return violation }
        let indexed = map.delta(for: peer), scanned = map._deltaByScanning(for: peer)
        let collectable = map.collectableKeys(stableFrontier: peer), collectableByScan = map._collectableKeysByScanning(stableFrontier: peer)
        if collectable != collectableByScan {
            return "collectable keys below \(peer) differ from the scan: \(collectable) against \(collectableByScan)"
        }
        guard indexed != scanned else { return nil }
        let keys = Set(indexed.entries.keys).symmetricDifference(scanned.entries.keys).sortedByUTF8()
        return "delta for \(peer) differs from the scan (keys \(keys); \(indexed.entries.count) against \(scanned.entries.count))"
    }

    @Test func deltaEqualsTheScanOnRandomHistories() {
        expectHolds(checkProperty("deltaEqualsTheScanOnRandomHistories", cases: 1_000,
                                  generate: { History.generate(using: &$0, maximumOperations: 60, collection: true) },
                                  shrink: { $0.shrunk() }) { history in
            let run = HistoryRun(history)
            for map in run.replicas {
                for past in run.pastContexts {
                    for peer in past + [VersionVector()] {
                        if let mismatch = Self.mismatch(map, peer) { return mismatch }
                    }
                }
            }
            return nil
        })
    }

    @Test(arguments: 0..<40)
    func deltaEqualsTheScanThroughChurn(seed: UInt64) {
        var random = Xoshiro256StarStar(seed: seed)
        let replicas: [ReplicaID] = ["a", "b", "c"]
        var maps = Array(repeating: ReplicatedMap(), count: replicas.count)
        var past: [VersionVector] = [VersionVector()]
        var time: UInt64 = 1_000
        let keyCount = random.next(in: 5...300)
        for step in 0..<600 {
            let r = random.next(below: maps.count)
            let other = (r + 1 + random.next(below: maps.count - 1)) % maps.count
            time += 1
            let timestamp = HybridTimestamp(wallMilliseconds: time, logical: 0)
            switch random.next(below: 100) {
            case 0..<50:
                maps[r].write(.integer(Int64(step)), forKey: "k\(random.next(below: keyCount))", replica: replicas[r], timestamp: timestamp)
            case 50..<65:
                maps[r].write(nil, forKey: "k\(random.next(below: keyCount))", replica: replicas[r], timestamp: timestamp)
            case 65..<75:
                let joined = maps[other]
                maps[r].join(joined)
            case 75..<88:
                let delta = maps[other].delta(for: random.element(of: past))
                maps[r].apply(delta)
            case 88..<93:
                let frontier = maps.dropFirst().reduce(maps[0].context) { $0.intersection($1.context) }
                for index in maps.indices { maps[index].collectTombstones(stableFrontier: frontier) }
            case 93..<97:
                maps[r] = try! ReplicatedMap(encoded: maps[r].encoded())
            default:
                var entries = maps[r].entries
                entries["k\(random.next(below: keyCount))"] = nil
                maps[r].entries = entries
                maps[r].usage = QuotaUsage()
                for siblings in entries.values { maps[r].usage.add(siblings) }
            }
            past.append(maps[r].context)
            if step % 7 == 0 || step == 599 {
                let lowered = VersionVector(Dictionary(uniqueKeysWithValues: replicas.map {
                    ($0, UInt64(random.next(below: Int(maps[r].context[$0]) + 1)))
                }))
                for peer in [VersionVector(), maps[other].context, random.element(of: past), lowered] {
                    if let mismatch = Self.mismatch(maps[r], peer) {
                        Issue.record("seed \(seed), step \(step), replica \(replicas[r]): \(mismatch)")
                        return
                    }
                }
            }
        }
    }

    /// The checker of the index of keys that hold only tombstones catches one left out: the
    /// key would never be collected.
    @Test func aTombstoneKeyMissingFromItsIndexIsCaught() {
        var map = ReplicatedMap()
        map.write(.integer(1), forKey: "kept", replica: "w", timestamp: HybridTimestamp(wallMilliseconds: 1, logical: 0))
        map.write(.integer(2), forKey: "gone", replica: "w", timestamp: HybridTimestamp(wallMilliseconds: 1, logical: 1))
        map.write(nil, forKey: "gone", replica: "w", timestamp: HybridTimestamp(wallMilliseconds: 1, logical: 2))
        #expect(map.collectableKeys(stableFrontier: map.context) == ["gone"])
        #expect(Self.mismatch(map, map.context) == nil)
        map._tombstoneKeys.remove("gone")
        #expect(map._dotIndexViolation() == "the keys that hold only tombstones are not the ones indexed")
        #expect(map.collectableKeys(stableFrontier: map.context).isEmpty)
        #expect(map._collectableKeysByScanning(stableFrontier: map.context) == ["gone"])
    }

    /// The index finds a replica's run through a table of positions (and the last position
    /// written to); a table that names another replica's run is caught, and the delta then
    /// differs from the scan: it leaves out writes the peer lacks.
    @Test func aRunFoundForTheWrongReplicaIsCaught() {
        var map = ReplicatedMap()
        for index in 0..<6 {
            map.write(.integer(Int64(index)), forKey: "key-\(index)", replica: index % 2 == 0 ? "a" : "b",
                      timestamp: HybridTimestamp(wallMilliseconds: 1, logical: UInt32(index)))
        }
        let peer = VersionVector(["a": 1, "b": 3])
        #expect(Self.mismatch(map, peer) == nil)
        map._dotIndex._swapReplicas(0, 1)
        #expect(map._dotIndexViolation() == "the dot index does not find every replica's run at its position")
        #expect(map.delta(for: peer) != map._deltaByScanning(for: peer))
    }

    /// A run of the index takes writes in any order; a search above a counter finds exactly
    /// the writes above it, whether they sit in the main array or in a level.
    @Test(arguments: 0..<20)
    func aRunFindsEveryWriteAboveACounterWhateverTheOrderTheyCameIn(seed: UInt64) {
        var random = Xoshiro256StarStar(seed: seed)
        var run = ReplicatedMap._DotIndex.Run()
        var counters: [UInt64] = []
        var next: UInt64 = 0
        for step in 0..<random.next(in: 1...3_000) {
            // Mostly in order, with bursts out of order (as a merge of another state's keys brings).
            next += 1
            let counter = random.next(below: 5) == 0 ? UInt64(random.next(in: 1...Int(next))) : next
            run.append(ReplicatedMap._DotIndex.Write(counter: counter, key: "k\(step)"))
            counters.append(counter)
            if step % 97 == 0 || random.next(below: 200) == 0 {
                let above = UInt64(random.next(below: Int(next) + 1))
                var found: [UInt64] = []
                run.forEach(above: above) { found.append($0.counter) }
                #expect(found.sorted() == counters.filter { $0 > above }.sorted(), "seed \(seed), step \(step), above \(above)")
                #expect(run.isOrdered, "seed \(seed), step \(step)")
            }
        }
    }

    @Test func aDeltaOfOneWriteInALargeMapHoldsOnlyItsKey() {
        var map = ReplicatedMap()
        for index in 0..<1_000 {
            map.write(.integer(Int64(index)), forKey: "key-\(index)", replica: "w", timestamp: HybridTimestamp(wallMilliseconds: 1, logical: UInt32(index)))
        }
        let peer = map.context
        map.write(.string("changed"), forKey: "key-7", replica: "w", timestamp: HybridTimestamp(wallMilliseconds: 2, logical: 0))
        #expect(map.delta(for: peer).entries == ["key-7": map.siblings(forKey: "key-7")])
        #expect(map._dotIndexViolation() == nil)
    }
}

/// A store plans a merge with `plannedApply` (no copy of its map) and installs it with
/// `replaceEntries`; the two steps must leave what `apply` leaves.
@Suite("Replicated map: a planned apply, installed, equals apply")
struct PlannedApplyTests {
    @Test func plannedApplyThenReplaceEqualsApply() {
        expectHolds(checkProperty("plannedApplyThenReplaceEqualsApply", cases: 1_000,
                                  generate: { History.generate(using: &$0, maximumOperations: 60, collection: true) },
                                  shrink: { $0.shrunk() }) { history in
            let run = HistoryRun(history)
            for (a, sender) in run.replicas.enumerated() {
                for (b, receiver) in run.replicas.enumerated() where a != b {
                    for peer in run.pastContexts[b] {
                        let delta = sender.delta(for: peer)
                        for partialKeys in [Set<String>(), Set(delta.entries.keys.sortedByUTF8().prefix(1))] {
                            var applied = receiver
                            let changed = applied.apply(delta, partialKeys: partialKeys)
                            var installed = receiver
                            let planned = installed.plannedApply(delta, partialKeys: partialKeys)
                            installed.replaceEntries(planned.entries, settingCounters: planned.contextCounters)
                            if installed != applied || planned.changedKeys != changed {
                                return "r\(b) + delta(r\(a), \(peer)), partial \(partialKeys.sortedByUTF8()): planned \(planned.changedKeys) gave \(MapProperties.describe(installed)), apply \(changed) gave \(MapProperties.describe(applied))"
                            }
                            if let violation = installed._dotIndexViolation() { return violation }
                        }
                    }
                }
            }
            return nil
        })
    }
}
