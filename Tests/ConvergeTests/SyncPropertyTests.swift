@_spi(Testing) @testable import Converge
import ConvergeSimulation
import ConvergeTestSupport
import Testing

/// Properties of the hub protocol over random histories of 2 to 8 devices with message
/// loss, duplication and reordering, clock skew, retirement, account switches and quota
/// pressure. Each runs on the real state machines and on broken variants.
enum SyncProperties {
    static let defaultCases = 1_000

    static func makeHub(policies: MergePolicies = MergePolicies()) -> HubSyncMachine {
        HubSyncMachine(quota: SyncHistory.quota, policies: policies, retirementIntervalMilliseconds: SyncHistory.retirementIntervalMilliseconds)
    }

    static func converges(
        name: String = "hubConverges", cases: Int = defaultCases, hub: @escaping () -> HubSyncMachine = { makeHub() },
        topology: SyncRun.Topology = .hub, guessesHubContext: Bool = false, leaksAcrossAccounts: Bool = false,
        readsPastGaps: Bool = false, maximumMessageBytes: Int? = nil
    ) -> PropertyFailure? {
        checkProperty(name, cases: cases,
                      generate: { SyncHistory.generate(using: &$0, devices: topology == .folder ? 2...4 : 2...8) }, shrink: { $0.shrunk() }) { history in
            var run = SyncRun(history, hub: hub(), topology: topology, guessesHubContext: guessesHubContext,
                              leaksAcrossAccounts: leaksAcrossAccounts, readsPastGaps: readsPastGaps, maximumMessageBytes: maximumMessageBytes)
            run.heal()
            return run.convergenceFailure(policies: everyPolicy)
        }
    }
}

/// The checker of ``SyncRun`` a failure came from, recognised by its message.
enum SyncChecker: String {
    /// A device's state (or visible values) differ from the hub's after healing.
    case convergence = "; the hub has "
    /// Two devices of a mesh differ after healing.
    case meshConvergence = "after healing, "
    /// A replica of one account holds a value of another.
    case accountLeak = " holds \""
}

/// Expects a broken variant to be caught, and by `checker`.
func expectCaught(_ failure: PropertyFailure?, by checker: SyncChecker, sourceLocation: SourceLocation = #_sourceLocation) {
    expectCaught(failure, sourceLocation: sourceLocation)
    guard let failure else { return }
    #expect(failure.message.contains(checker.rawValue), "caught by another checker than \(checker): \(failure.message)",
            sourceLocation: sourceLocation)
}

@Suite("Sync through the hub: convergence, quota, no lost write, accounts")
struct SyncPropertyTests {
    @Test func hubConverges() {
        expectHolds(SyncProperties.converges())
    }

    @Test func convergenceCatchesASenderThatGuessesTheHubsContext() {
        expectCaught(SyncProperties.converges(cases: 300, guessesHubContext: true), by: .convergence)
    }

    @Test func convergenceCatchesAHubThatCollectsTombstonesBeforeTheyAreStable() {
        expectCaught(SyncProperties.converges(cases: 500, hub: {
            var hub = SyncProperties.makeHub()
            hub._collectsBeforeStable = true
            return hub
        }), by: .convergence)
    }

    @Test func convergenceCatchesAHubThatForgetsCompensatingWrites() {
        expectCaught(SyncProperties.converges(cases: 300, hub: {
            var hub = SyncProperties.makeHub()
            hub._forgetsCompensatingWrites = true
            return hub
        }), by: .convergence)
    }
}

/// The same histories with messages so small that most changes and every returning
/// device's full state travel in pages.
extension SyncPropertyTests {
    static func pagingHub() -> HubSyncMachine {
        var hub = SyncProperties.makeHub()
        hub.maximumReplyBytes = 160
        return hub
    }

    @Test func hubConvergesWhenEverythingTravelsInPages() {
        expectHolds(SyncProperties.converges(name: "hubConvergesInPages", hub: Self.pagingHub, maximumMessageBytes: 100))
    }

    @Test func pagedHistoriesPageRepliesAndFullStates() {
        var generator = Xoshiro256StarStar(seed: 8)
        var (paged, pagedFullStates) = (0, 0)
        for _ in 0..<200 {
            var run = SyncRun(SyncHistory.generate(using: &generator), hub: Self.pagingHub(), maximumMessageBytes: 100)
            run.heal()
            if run.pagedReplies > 0 { paged += 1 }
            if run.pagedReplies > 0 && run.fullStateReplies > 0 { pagedFullStates += 1 }
        }
        print("of 200 paged histories, \(paged) had paged replies, \(pagedFullStates) also full-state replies")
        #expect(paged > 100 && pagedFullStates > 5)
    }

    @Test func convergenceCatchesAHubWhosePagesClaimItsWholeContext() {
        expectCaught(SyncProperties.converges(name: "hubConvergesInPages", cases: 300, hub: {
            var hub = Self.pagingHub()
            hub._pagesClaimWholeContext = true
            return hub
        }, maximumMessageBytes: 100), by: .convergence)
    }
}

extension SyncPropertyTests {
    @Test func convergenceCatchesADeviceThatLeaksDataAcrossAccounts() {
        expectCaught(SyncProperties.converges(cases: 300, leaksAcrossAccounts: true), by: .accountLeak)
    }

    /// The same histories in the mesh topology: devices gossip push-pull with each other;
    /// the quota is soft (a replica over it refuses writes that grow usage).
    @Test func meshConverges() {
        expectHolds(SyncProperties.converges(name: "meshConverges", topology: .mesh))
    }

    @Test func meshConvergenceCatchesASenderThatGuessesThePeersContext() {
        expectCaught(SyncProperties.converges(name: "meshConverges", cases: 300, topology: .mesh, guessesHubContext: true), by: .meshConvergence)
    }

    @Test func meshConvergenceCatchesADeviceThatLeaksDataAcrossAccounts() {
        expectCaught(SyncProperties.converges(name: "meshConverges", cases: 300, topology: .mesh, leaksAcrossAccounts: true), by: .accountLeak)
    }

    /// The same histories through the shared-folder transport on a simulated folder: each
    /// file reaches each other device late, out of order, or never (if it is compacted
    /// first); the quota is soft, as in the mesh.
    @Test func folderConverges() {
        expectHolds(SyncProperties.converges(name: "folderConverges", topology: .folder))
    }

    @Test func folderConvergenceCatchesAWriterThatGuessesWhatReadersHold() {
        expectCaught(SyncProperties.converges(name: "folderConverges", cases: 300, topology: .folder, guessesHubContext: true),
                     by: .meshConvergence)
    }

    @Test func folderConvergenceCatchesAReaderThatReadsPastAGap() {
        expectCaught(SyncProperties.converges(name: "folderConverges", cases: 300, topology: .folder, readsPastGaps: true),
                     by: .meshConvergence)
    }

    @Test func folderConvergenceCatchesADeviceThatLeaksDataAcrossAccounts() {
        expectCaught(SyncProperties.converges(name: "folderConverges", cases: 300, topology: .folder, leaksAcrossAccounts: true),
                     by: .accountLeak)
    }

    /// The histories reach the interesting cases often enough for the properties to mean
    /// something: quota compensations, retired devices returning, tombstone collection and
    /// account switches.
    @Test func randomHistoriesExerciseEveryMechanism() {
        var generator = Xoshiro256StarStar(seed: 5)
        var (compensating, returning, collecting, switching, polling, cases) = (0, 0, 0, 0, 0, 300)
        var relative = 0
        for _ in 0..<cases {
            var run = SyncRun(SyncHistory.generate(using: &generator), hub: SyncProperties.makeHub())
            run.heal()
            if run.compensations > 0 { compensating += 1 }
            if run.fullStateReplies > 0 { returning += 1 }
            if SyncRun.accounts.contains(where: { run.hub.tombstonesCollected(in: $0) > 0 }) { collecting += 1 }
            if run.accountSwitches > 0 { switching += 1 }
            if run.upToDateAnswers > 0 { polling += 1 }
            if run.relativeReplies > 0 { relative += 1 }
        }
        var meshOverQuota = 0
        for _ in 0..<cases {
            var run = SyncRun(SyncHistory.generate(using: &generator), hub: SyncProperties.makeHub(), topology: .mesh)
            run.heal()
            if SyncRun.accounts.contains(where: { !SyncHistory.quota.admits(run.convergedState(of: $0).usage) }) { meshOverQuota += 1 }
        }
        print("of \(cases) mesh histories, \(meshOverQuota) converged over the soft quota")
        #expect(meshOverQuota > cases / 20)
        var (outOfOrder, neverDelivered) = (0, 0)
        for _ in 0..<cases {
            var run = SyncRun(SyncHistory.generate(using: &generator, devices: 2...4), hub: SyncProperties.makeHub(), topology: .folder)
            run.heal()
            if run.filesOutOfOrder > 0 { outOfOrder += 1 }
            if run.filesNeverDelivered > 0 { neverDelivered += 1 }
        }
        print("of \(cases) folder histories, \(outOfOrder) delivered files out of order, \(neverDelivered) removed files before they arrived")
        #expect(outOfOrder > cases / 20)
        #expect(neverDelivered > cases / 20)
        print("of \(cases) histories: \(compensating) with compensations, \(returning) with a returning retired device, \(collecting) with tombstones collected, \(switching) with account switches, \(polling) with up-to-date answers to polls")
        #expect(compensating > cases / 10)
        #expect(returning > cases / 10)
        #expect(collecting > cases / 10)
        #expect(switching > cases / 10)
        #expect(polling > cases / 10)
        print("of \(cases) histories: \(relative) with replies relative to what the device held")
        #expect(relative > cases / 10)
    }
}
