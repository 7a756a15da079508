import Converge
import ConvergeTestSupport
import Testing

/// Records a property failure with its seed, shrunk input and reproduce command.
func expectHolds(_ failure: PropertyFailure?, sourceLocation: SourceLocation = #_sourceLocation) {
    if let failure { Issue.record("\(failure)", sourceLocation: sourceLocation) }
}

/// Expects a property to catch a broken variant, and its shrunk input to be small.
func expectCaught(_ failure: PropertyFailure?, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(failure != nil, "the property did not catch the broken variant", sourceLocation: sourceLocation)
}

@Suite("Replicated map: CRDT laws and convergence")
struct ReplicatedMapPropertyTests {
    @Test func joinIsCommutative() { expectHolds(MapProperties.joinIsCommutative(.correct)) }
    @Test func joinIsAssociative() { expectHolds(MapProperties.joinIsAssociative(.correct)) }
    @Test func joinIsIdempotent() { expectHolds(MapProperties.joinIsIdempotent(.correct)) }
    @Test func deltaEqualsJoin() { expectHolds(MapProperties.deltaEqualsJoin(.correct)) }
    @Test func deliveryConverges() { expectHolds(MapProperties.deliveryConverges(.correct)) }
    @Test func collectionKeepsVisibleValues() { expectHolds(MapProperties.collectionKeepsVisibleValues(.correct)) }
}

@Suite("Replicated map: each property catches a broken variant")
struct ReplicatedMapBrokenVariantTests {
    @Test func commutativityCatchesLeftBiasedJoin() {
        expectCaught(MapProperties.joinIsCommutative(BrokenVariants.leftBiasedJoin, cases: 500))
    }

    @Test func associativityCatchesLeftContextJoin() {
        expectCaught(MapProperties.joinIsAssociative(BrokenVariants.leftContextJoin, cases: 500))
    }

    @Test func idempotenceCatchesForgetfulJoin() {
        expectCaught(MapProperties.joinIsIdempotent(BrokenVariants.forgetfulJoin, cases: 500))
    }

    @Test func deltaEquivalenceCatchesTombstoneDroppingDelta() {
        expectCaught(MapProperties.deltaEqualsJoin(BrokenVariants.tombstoneDroppingDelta, cases: 500))
    }

    @Test func deltaEquivalenceCatchesGuessingSender() {
        expectCaught(MapProperties.deltaEqualsJoin(BrokenVariants.guessingSender, cases: 500))
    }

    @Test func convergenceCatchesGuessingSender() {
        expectCaught(MapProperties.deliveryConverges(BrokenVariants.guessingSender, cases: 500))
    }

    @Test func convergenceCatchesContextIgnoringReceiver() {
        expectCaught(MapProperties.deliveryConverges(BrokenVariants.contextIgnoringReceiver, cases: 500))
    }

    @Test func convergenceCatchesReaderBiasedPolicy() {
        expectCaught(MapProperties.deliveryConverges(.correct, cases: 500, policies: [BrokenVariants.readerBiasedPolicy]))
    }

    @Test func collectionCatchesEagerCollection() {
        expectCaught(MapProperties.collectionKeepsVisibleValues(BrokenVariants.eagerCollection, cases: 500))
    }

    @Test func collectionCatchesSinglePhaseCollection() {
        expectCaught(MapProperties.collectionKeepsVisibleValues(BrokenVariants.singlePhaseCollection, cases: 2_000))
    }

    @Test func failuresShrinkAndPrintTheirSeed() throws {
        let failure = try #require(MapProperties.joinIsCommutative(BrokenVariants.leftBiasedJoin, cases: 500))
        #expect(failure.description.contains("CONVERGE_PROPERTY_SEED=\(failure.seed) swift test --filter 'joinIsCommutative'"))
        let shrunkLines = failure.shrunk.split(separator: "\n").count
        let originalLines = failure.original.split(separator: "\n").count
        #expect(shrunkLines <= originalLines)
        #expect(shrunkLines <= 6, "a left-biased join needs only a couple of writes to show: \(failure.shrunk)")
    }
}

