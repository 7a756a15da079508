@testable import Converge
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
        topology: SyncTopology = .hub, guessesHubContext: Bool = false, leaksAcrossAccounts: Bool = false
    ) -> PropertyFailure? {
        checkProperty(name, cases: cases,
                      generate: { SyncHistory.generate(using: &$0) }, shrink: { $0.shrunk() }) { history in
            var run = SyncRun(history, hub: hub(), topology: topology, guessesHubContext: guessesHubContext,
                              leaksAcrossAccounts: leaksAcrossAccounts)
            run.heal()
            return run.convergenceFailure(policies: everyPolicy)
        }
    }
}

@Suite("Sync through the hub: convergence, quota, no lost write, accounts")
struct SyncPropertyTests {
    @Test func hubConverges() {
        expectHolds(SyncProperties.converges())
    }

    @Test func convergenceCatchesASenderThatGuessesTheHubsContext() {
        expectCaught(SyncProperties.converges(cases: 300, guessesHubContext: true))
    }

    @Test func convergenceCatchesAHubThatCollectsTombstonesBeforeTheyAreStable() {
        expectCaught(SyncProperties.converges(cases: 500, hub: {
            var hub = SyncProperties.makeHub()
            hub._collectsBeforeStable = true
            return hub
        }))
    }

    @Test func convergenceCatchesAHubThatForgetsCompensatingWrites() {
        expectCaught(SyncProperties.converges(cases: 300, hub: {
            var hub = SyncProperties.makeHub()
            hub._forgetsCompensatingWrites = true
            return hub
        }))
    }
}

extension SyncPropertyTests {
    @Test func convergenceCatchesADeviceThatLeaksDataAcrossAccounts() {
        expectCaught(SyncProperties.converges(cases: 300, leaksAcrossAccounts: true))
    }

    /// The same histories in the mesh topology: devices gossip push-pull with each other;
    /// the quota is soft (a replica over it refuses writes that grow usage).
    @Test func meshConverges() {
        expectHolds(SyncProperties.converges(name: "meshConverges", topology: .mesh))
    }

    @Test func meshConvergenceCatchesASenderThatGuessesThePeersContext() {
        expectCaught(SyncProperties.converges(name: "meshConverges", cases: 300, topology: .mesh, guessesHubContext: true))
    }

    @Test func meshConvergenceCatchesADeviceThatLeaksDataAcrossAccounts() {
        expectCaught(SyncProperties.converges(name: "meshConverges", cases: 300, topology: .mesh, leaksAcrossAccounts: true))
    }

    /// The histories reach the interesting cases often enough for the properties to mean
    /// something: quota compensations, retired devices returning, tombstone collection and
    /// account switches.
    @Test func randomHistoriesExerciseEveryMechanism() {
        var generator = Xoshiro256StarStar(seed: 5)
        var (compensating, returning, collecting, switching, polling, cases) = (0, 0, 0, 0, 0, 300)
        for _ in 0..<cases {
            var run = SyncRun(SyncHistory.generate(using: &generator), hub: SyncProperties.makeHub())
            run.heal()
            if run.compensations > 0 { compensating += 1 }
            if run.fullStateReplies > 0 { returning += 1 }
            if SyncRun.accounts.contains(where: { run.hub.tombstonesCollected(in: $0) > 0 }) { collecting += 1 }
            if run.accountSwitches > 0 { switching += 1 }
            if run.upToDateAnswers > 0 { polling += 1 }
        }
        var meshOverQuota = 0
        for _ in 0..<cases {
            var run = SyncRun(SyncHistory.generate(using: &generator), hub: SyncProperties.makeHub(), topology: .mesh)
            run.heal()
            if SyncRun.accounts.contains(where: { !SyncHistory.quota.admits(run.convergedState(of: $0).usage) }) { meshOverQuota += 1 }
        }
        print("of \(cases) mesh histories, \(meshOverQuota) converged over the soft quota")
        #expect(meshOverQuota > cases / 20)
        print("of \(cases) histories: \(compensating) with compensations, \(returning) with a returning retired device, \(collecting) with tombstones collected, \(switching) with account switches, \(polling) with up-to-date answers to polls")
        #expect(compensating > cases / 10)
        #expect(returning > cases / 10)
        #expect(collecting > cases / 10)
        #expect(switching > cases / 10)
        #expect(polling > cases / 10)
    }
}
