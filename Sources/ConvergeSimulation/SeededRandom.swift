/// SplitMix64 (Steele, Lea and Flood, 2014): expands one 64-bit seed into a stream of
/// well-mixed words. Used to seed ``Xoshiro256StarStar`` and to derive sub-seeds.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// xoshiro256** (Blackman and Vigna, 2018): the generator every simulation and property
/// test draws from. One `UInt64` seed determines every value it produces, on every
/// platform, so a run is reproducible from its seed.
package struct Xoshiro256StarStar: RandomNumberGenerator, Sendable {
    private var s0, s1, s2, s3: UInt64

    /// Creates a generator whose state is expanded from `seed` with ``SplitMix64``.
    package init(seed: UInt64) {
        var mixer = SplitMix64(seed: seed)
        s0 = mixer.next()
        s1 = mixer.next()
        s2 = mixer.next()
        s3 = mixer.next()
    }

    package mutating func next() -> UInt64 {
        let result = ((s1 &* 5) << 7 | (s1 &* 5) >> 57) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = s3 << 45 | s3 >> 19
        return result
    }

    /// A uniformly distributed integer in `0..<upperBound` (Lemire's method, without the
    /// standard library's unspecified algorithm, so results are stable across releases).
    package mutating func next(below upperBound: Int) -> Int {
        precondition(upperBound > 0, "upper bound must be positive")
        let bound = UInt64(upperBound)
        var product = next().multipliedFullWidth(by: bound)
        if product.low < bound {
            let threshold = (0 &- bound) % bound
            while product.low < threshold { product = next().multipliedFullWidth(by: bound) }
        }
        return Int(product.high)
    }

    /// A uniformly distributed integer in `range`.
    package mutating func next(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + next(below: range.upperBound - range.lowerBound + 1)
    }

    /// A uniformly distributed double in `0..<1`, from the top 53 bits.
    package mutating func nextUnitDouble() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// `true` with probability `probability`.
    package mutating func chance(_ probability: Double) -> Bool {
        nextUnitDouble() < probability
    }

    /// A uniformly chosen element; the collection must not be empty.
    package mutating func element<C: RandomAccessCollection>(of collection: C) -> C.Element where C.Index == Int {
        collection[collection.startIndex + next(below: collection.count)]
    }

    /// A new seed for an independent sub-stream (a device, a test case).
    package mutating func nextSeed() -> UInt64 { next() }
}
