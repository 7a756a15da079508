import Converge
@testable import ConvergeSimulation
import Testing

/// The reference model's own rules, on observations written out by hand.
@Suite("The reference model")
struct ReferenceModelTests {
    typealias WriteID = ReferenceModel.WriteID

    /// The case of `changesSentInPagesConverge` (seed 2 once device pushes honoured the
    /// simulator's 300-byte messages), reduced: d0 writes k15 (d0:1), then k27 (d0:2), then
    /// removes k15 (d0:3). Its page capped at d0:2 holds k27 only (k15's sibling lies beyond
    /// the cap), so the hub may lack d0:1, and so may d1, which the hub answers in one whole
    /// reply before the removal arrives: the excuse travels with what the hub sends.
    static func pagedThenForwarded() -> ReferenceModel {
        var model = ReferenceModel()
        let writes: [(String, UInt64, Value?)] = [("k15", 1, .string("first")), ("k27", 2, .string("other")), ("k15", 3, nil)]
        for (index, (key, counter, value)) in writes.enumerated() {
            let problem = model.recordWrite(by: .device(0), account: .default, key: key, id: WriteID(replica: "d0", counter: counter),
                                            stamp: ReferenceModel.Stamp(wall: counter, logical: 0), value: value, ledgerIndex: index)
            #expect(problem == nil)
        }
        model.sent(message: 1, from: .device(0), account: .default, cap: ["d0": 2])
        model.delivered(message: 1, to: .hub, currentAccount: nil, lastCopy: true)
        model.sent(message: 2, from: .hub, account: .default)
        model.delivered(message: 2, to: .device(1), currentAccount: .default, lastCopy: true)
        return model
    }

    @Test func anExcuseMadeByAPageTravelsWithWhatItsReceiverSendsOn() {
        let model = Self.pagedThenForwarded()
        let replaced = WriteID(replica: "d0", counter: 1)
        #expect(model.counters(of: model.knowledge(of: .device(1), in: .default)) == ["d0": 2])
        // Without the excuse d1 would owe d0:1: it knows it, and not the removal.
        #expect(model.expected(in: .default, knowing: model.knowledge(of: .device(1), in: .default))["k15"]?.map(\.id) == [replaced])
        #expect(model.isExcused(replaced, at: .hub, in: .default))
        #expect(model.isExcused(replaced, at: .device(1), in: .default))
        // Only a write its sender saw replaced is excused.
        #expect(!model.isExcused(WriteID(replica: "d0", counter: 2), at: .device(1), in: .default))
        #expect(!model.isExcused(replaced, at: .device(2), in: .default))
    }

    /// d1 replaces d0's write of k (d0:1) with d1:1 and sends a page capped at d1:1 and
    /// nothing of d0's: the page carries d1:1 under a context that does not cover d0:1, so a
    /// receiver holding d0:1 keeps it beside d1:1 (`quota-pressure.json` in 300-byte
    /// messages, seed 124). d0:1 is excused there, and wherever the receiver's answers go;
    /// d0:2, of another key and beyond the cap too, is not.
    @Test func aPageExcusesAWriteBeyondItsCapThatAWriteUnderItSaw() {
        var model = ReferenceModel()
        let replaced = WriteID(replica: "d0", counter: 1), other = WriteID(replica: "d0", counter: 2)
        for (index, (id, key)) in [(replaced, "k"), (other, "j")].enumerated() {
            #expect(model.recordWrite(by: .device(0), account: .default, key: key, id: id, stamp: ReferenceModel.Stamp(wall: id.counter, logical: 0),
                                      value: .string("d0's"), ledgerIndex: index) == nil)
        }
        model.sent(message: 1, from: .device(0), account: .default)
        model.delivered(message: 1, to: .hub, currentAccount: nil, lastCopy: true)
        model.sent(message: 2, from: .hub, account: .default)
        model.delivered(message: 2, to: .device(1), currentAccount: .default, lastCopy: true)
        #expect(model.recordWrite(by: .device(1), account: .default, key: "k", id: WriteID(replica: "d1", counter: 1),
                                  stamp: ReferenceModel.Stamp(wall: 3, logical: 0), value: .string("d1's"), ledgerIndex: 2) == nil)
        #expect(!model.isExcused(replaced, at: .hub, in: .default))
        model.sent(message: 3, from: .device(1), account: .default, cap: ["d1": 1])
        model.delivered(message: 3, to: .hub, currentAccount: nil, lastCopy: true)
        model.sent(message: 4, from: .hub, account: .default)
        model.delivered(message: 4, to: .device(2), currentAccount: .default, lastCopy: true)
        #expect(model.isExcused(replaced, at: .hub, in: .default))
        #expect(model.isExcused(replaced, at: .device(2), in: .default))
        #expect(!model.isExcused(other, at: .hub, in: .default))
        #expect(!model.isExcused(replaced, at: .device(0), in: .default))
    }

    /// A write whose superseder was lost in a crash is owed again, excused or not.
    @Test func anExcuseEndsWhenTheWriteThatSupersededItIsForgotten() {
        var model = Self.pagedThenForwarded()
        model.forget(ledgerIndex: 2)
        #expect(!model.isExcused(WriteID(replica: "d0", counter: 1), at: .hub, in: .default))
        #expect(!model.isExcused(WriteID(replica: "d0", counter: 1), at: .device(1), in: .default))
    }

    /// The hub compensates d0's write of k with a removal (hub:1) that d0 sees; the hub is
    /// restored from a backup taken before either, and d0 pushes again, claiming hub:1. The
    /// hub no longer holds d0:1 (it was replaced), so what it sends d1 carries hub:1 as
    /// superseding it: d1 owes nothing of k. Before, the hub's answers carried d0:1 without
    /// hub:1, and d1 owed a write no replica held (the harsher sweep's hub-restore seeds
    /// 1006, 1043 and 1052 failed so).
    @Test func aRemovalTheRestoredHubLostStillSupersedesInWhatItSends() {
        var model = ReferenceModel()
        model.backedUpHub()
        let written = WriteID(replica: "d0", counter: 1), removal = WriteID(replica: "hub", counter: 1)
        #expect(model.recordWrite(by: .device(0), account: .default, key: "k", id: written,
                                  stamp: ReferenceModel.Stamp(wall: 1, logical: 0), value: .string("big"), ledgerIndex: 0) == nil)
        model.sent(message: 1, from: .device(0), account: .default)
        model.hubReceivedPush(message: 1, from: 0, writer: "d0", hub: "hub", entries: [written], basis: [:], lastCopy: true)
        #expect(model.recordWrite(by: .hub, account: .default, key: "k", id: removal,
                                  stamp: ReferenceModel.Stamp(wall: 2, logical: 0), value: nil, ledgerIndex: nil) == nil)
        model.sent(message: 2, from: .hub, account: .default)
        model.delivered(message: 2, to: .device(0), currentAccount: .default, lastCopy: true)
        model.restoredHubFromBackup()
        #expect(model.counters(of: model.knowledge(of: .hub, in: .default)).isEmpty)
        model.sent(message: 3, from: .device(0), account: .default)
        model.hubReceivedPush(message: 3, from: 0, writer: "d0", hub: "hub", entries: [], basis: [:], lastCopy: true)
        // The hub believes d0 on its own write, and notes the removal it lost.
        #expect(model.counters(of: model.knowledge(of: .hub, in: .default)) == ["d0": 1])
        #expect(model.counters(of: model.accountedFor(by: .hub, in: .default)) == ["d0": 1, "hub": 1])
        model.sent(message: 4, from: .hub, account: .default)
        model.delivered(message: 4, to: .device(1), currentAccount: .default, lastCopy: true)
        let known = model.knowledge(of: .device(1), in: .default)
        #expect(model.counters(of: known) == ["d0": 1, "hub": 1])
        #expect(model.expected(in: .default, knowing: known)["k"]?.filter { $0.value != nil }.isEmpty ?? true)
    }

    /// Two copies of one store write under d3 (`device-clone.json` in the mesh, seed 172,
    /// shrunk in `Traces/mesh-clone-twin-reissues-withdrawn.jsonl`): d0 writes d3:1 and
    /// d3:2, its twin d1 writes another d3:1. d0 finds the reuse and re-stamps both under
    /// d3~1, withdrawing d3:1 and d3:2; d1 stays on d3 and, knowing the originals and their
    /// copies, writes d3:2 again. That counter is free (every write it named was replaced),
    /// and the model takes it in the mesh. It still refuses d1 reusing its own d3:1, d3:2
    /// while d1 knows the original and not its copy, and any such reuse in the hub topology.
    @Test(arguments: [true, false])
    func aTwinMayIssueAgainTheCountersItsOtherCopyWithdrew(copiesStandIn: Bool) {
        var model = ReferenceModel()
        model.copiesStandIn = copiesStandIn
        func write(by d: Int, _ key: String, _ replica: String, _ counter: UInt64, ledger: Int) -> String? {
            model.recordWrite(by: .device(d), account: .default, key: key, id: WriteID(replica: replica, counter: counter),
                              stamp: ReferenceModel.Stamp(wall: UInt64(ledger + 1), logical: 0), value: .string(key), ledgerIndex: ledger)
        }
        #expect(write(by: 0, "k1", "d3", 1, ledger: 0) == nil)
        #expect(write(by: 0, "k14", "d3", 2, ledger: 1) == nil)
        #expect(write(by: 1, "k0", "d3", 1, ledger: 2) == nil)
        // d1 learns the originals (from a peer that took them before the re-stamp).
        model.sent(message: 1, from: .device(0), account: .default)
        model.delivered(message: 1, to: .device(1), currentAccount: .default, lastCopy: true)
        let restamps = [("k1", UInt64(1), 3), ("k14", 2, 4)].map { key, counter, ledger in
            ReferenceModel.Restamp(key: key, old: WriteID(replica: "d3", counter: counter), new: WriteID(replica: "d3~1", counter: counter),
                                   stamp: ReferenceModel.Stamp(wall: UInt64(ledger - 2), logical: 0), value: .string(key), ledgerIndex: ledger)
        }
        let (problems, _) = model.reincarnated(device: 0, account: .default, oldWriter: "d3", oldWriterCount: 0, restamped: restamps)
        #expect(problems.isEmpty)
        // Knowing the originals and not their copies, d1 must go on from d3:3.
        var withoutCopies = model
        let early = withoutCopies.recordWrite(by: .device(1), account: .default, key: "k1", id: WriteID(replica: "d3", counter: 2),
                                              stamp: ReferenceModel.Stamp(wall: 9, logical: 0), value: nil, ledgerIndex: 9)
        #expect(early?.contains("the model expected number 3") == true, "\(early ?? "no problem")")
        // Then it learns the copies.
        model.sent(message: 2, from: .device(0), account: .default)
        model.delivered(message: 2, to: .device(1), currentAccount: .default, lastCopy: true)
        var reusingOwn = model
        let ownAgain = reusingOwn.recordWrite(by: .device(1), account: .default, key: "k2", id: WriteID(replica: "d3", counter: 1),
                                              stamp: ReferenceModel.Stamp(wall: 9, logical: 0), value: nil, ledgerIndex: 9)
        #expect(ownAgain?.contains("is not its writer's next") == true, "\(ownAgain ?? "no problem")")
        let reissue = write(by: 1, "k1", "d3", 2, ledger: 5)
        if copiesStandIn {
            #expect(reissue == nil)
        } else {
            #expect(reissue?.contains("the model expected number 3") == true, "\(reissue ?? "no problem")")
        }
    }

    /// What `device-clone.json` in the mesh, seed 38, shrank to
    /// (`Traces/mesh-restamp-replaced-own-write.jsonl`): a restored writer wrote a key twice
    /// and re-stamped only the second write, whose copy no longer claims the first's dot.
    /// Here d0 writes k12 (d3:1), k5 (d3:2) and k12 again (d3:3, which saw d3:1); d1 takes
    /// d3:1 only; d0 re-stamps d3:2 and d3:3 as d3~1:1 and d3~1:2, and d1 learns the copies.
    /// In the mesh d3:1 may then be gone at d1 (the withdrawal dropped it) or held beside
    /// k12's copy: it stands in for it (before, the model owed it); k5's copy stands in for
    /// its original only. In the hub topology nothing changes.
    @Test(arguments: [true, false])
    func aCopyStandsInForTheWritesItsOriginalReplacedUnderTheWithdrawnCounters(copiesStandIn: Bool) {
        var model = ReferenceModel()
        model.copiesStandIn = copiesStandIn
        let written: [(String, UInt64, Value?)] = [("k12", 1, .string("first")), ("k5", 2, .string("other")), ("k12", 3, .string("second"))]
        for (index, (key, counter, value)) in written.enumerated() {
            #expect(model.recordWrite(by: .device(0), account: .default, key: key, id: WriteID(replica: "d3", counter: counter),
                                      stamp: ReferenceModel.Stamp(wall: counter, logical: 0), value: value, ledgerIndex: index) == nil)
            // d1 takes the first write before the others.
            if index == 0 {
                model.sent(message: 1, from: .device(0), account: .default)
                model.delivered(message: 1, to: .device(1), currentAccount: .default, lastCopy: true)
            }
        }
        let restamps = [("k5", UInt64(2), UInt64(1), Value.string("other"), 3), ("k12", 3, 2, .string("second"), 4)].map { key, old, new, value, ledger in
            ReferenceModel.Restamp(key: key, old: WriteID(replica: "d3", counter: old), new: WriteID(replica: "d3~1", counter: new),
                                   stamp: ReferenceModel.Stamp(wall: old, logical: 0), value: value, ledgerIndex: ledger)
        }
        #expect(model.reincarnated(device: 0, account: .default, oldWriter: "d3", oldWriterCount: 0, restamped: restamps).problems.isEmpty)
        model.sent(message: 2, from: .device(0), account: .default)
        model.delivered(message: 2, to: .device(1), currentAccount: .default, lastCopy: true)
        let known = model.knowledge(of: .device(1), in: .default)
        let expected = model.expected(in: .default, knowing: known)
        let first = WriteID(replica: "d3", counter: 1)
        #expect(expected["k12"]?.map(\.id).contains(first) == !copiesStandIn, "\(expected)")
        #expect((model.representedOriginals(in: .default, knowing: known)["k12"]?.map(\.id).contains(first) ?? false) == copiesStandIn)
        // k5's write was re-stamped itself: its copy is owed, and in the mesh it stands in for
        // its original only.
        #expect(expected["k5"]?.map(\.id).contains(WriteID(replica: "d3~1", counter: 1)) == true, "\(expected)")
        #expect(model.representedOriginals(in: .default, knowing: known)["k5"]?.map(\.id) == (copiesStandIn ? [WriteID(replica: "d3", counter: 2)] : nil))
    }

    /// A copy stands in only for writes of its own key: d0 writes k12 (d3:1), which d1 takes;
    /// d2 replaces it (d5:1, later lost in a crash) and d0 learns that; d0 writes k5 (d3:2)
    /// and re-stamps only that write. d1, knowing d3:1 of k12 and k5's copy, still owes d3:1
    /// (nothing that counts superseded it), although k5's original saw it.
    @Test func aCopyStandsInForNothingOfAnotherKey() {
        var model = ReferenceModel()
        model.copiesStandIn = true
        func stamp(_ wall: UInt64) -> ReferenceModel.Stamp { ReferenceModel.Stamp(wall: wall, logical: 0) }
        let first = WriteID(replica: "d3", counter: 1)
        #expect(model.recordWrite(by: .device(0), account: .default, key: "k12", id: first, stamp: stamp(1), value: .string("a"), ledgerIndex: 0) == nil)
        model.sent(message: 1, from: .device(0), account: .default)
        model.delivered(message: 1, to: .device(1), currentAccount: .default, lastCopy: true)
        model.sent(message: 2, from: .device(0), account: .default)
        model.delivered(message: 2, to: .device(2), currentAccount: .default, lastCopy: true)
        #expect(model.recordWrite(by: .device(2), account: .default, key: "k12", id: WriteID(replica: "d5", counter: 1), stamp: stamp(2),
                                  value: .string("b"), ledgerIndex: 1) == nil)
        model.sent(message: 3, from: .device(2), account: .default)
        model.delivered(message: 3, to: .device(0), currentAccount: .default, lastCopy: true)
        #expect(model.recordWrite(by: .device(0), account: .default, key: "k5", id: WriteID(replica: "d3", counter: 2), stamp: stamp(3),
                                  value: .string("c"), ledgerIndex: 2) == nil)
        model.forget(ledgerIndex: 1)
        let restamp = ReferenceModel.Restamp(key: "k5", old: WriteID(replica: "d3", counter: 2), new: WriteID(replica: "d3~1", counter: 1),
                                             stamp: stamp(3), value: .string("c"), ledgerIndex: 3)
        #expect(model.reincarnated(device: 0, account: .default, oldWriter: "d3", oldWriterCount: 0, restamped: [restamp]).problems.isEmpty)
        model.sent(message: 4, from: .device(0), account: .default)
        model.delivered(message: 4, to: .device(1), currentAccount: .default, lastCopy: true)
        let known = model.knowledge(of: .device(1), in: .default)
        #expect(model.expected(in: .default, knowing: known)["k12"]?.map(\.id) == [first])
        #expect(model.representedOriginals(in: .default, knowing: known)["k12"] == nil)
    }
}
