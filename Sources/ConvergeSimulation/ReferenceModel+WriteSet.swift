/// A set of the reference model's writes, by their number in ``ReferenceModel/writes`` (the
/// order the simulator performed them in): what a replica, a disk, a backup or a message
/// knows, and what a write saw.
///
/// The model names writes by number rather than by dot because a dot can name two writes:
/// two devices on copies of one disk (a clone) write under one replica ID, and a device
/// restored from a backup writes again under dots it used before. A number names one write
/// for the whole run, whichever lineage of a disk made it.
struct WriteSet: Equatable {
    private var words: [UInt64] = []

    init() {}

    init<S: Sequence>(_ numbers: S) where S.Element == Int {
        for number in numbers { insert(number) }
    }

    func contains(_ number: Int) -> Bool {
        let word = number >> 6
        return word < words.count && words[word] & (1 << UInt64(number & 63)) != 0
    }

    mutating func insert(_ number: Int) {
        let word = number >> 6
        if word >= words.count { words.append(contentsOf: repeatElement(0, count: word - words.count + 1)) }
        words[word] |= 1 << UInt64(number & 63)
    }

    mutating func remove(_ number: Int) {
        let word = number >> 6
        guard word < words.count else { return }
        words[word] &= ~(1 << UInt64(number & 63))
    }

    mutating func formUnion(_ other: WriteSet) {
        if other.words.count > words.count { words.append(contentsOf: repeatElement(0, count: other.words.count - words.count)) }
        for index in other.words.indices { words[index] |= other.words[index] }
    }

    func union(_ other: WriteSet) -> WriteSet {
        var result = self
        result.formUnion(other)
        return result
    }

    func filter(_ isIncluded: (Int) -> Bool) -> WriteSet {
        var result = WriteSet()
        for number in members where isIncluded(number) { result.insert(number) }
        return result
    }

    var isEmpty: Bool { words.allSatisfy { $0 == 0 } }

    /// The numbers in the set, in increasing order.
    var members: [Int] {
        var result: [Int] = []
        for (index, word) in words.enumerated() where word != 0 {
            var bits = word
            while bits != 0 {
                result.append(index << 6 + bits.trailingZeroBitCount)
                bits &= bits - 1
            }
        }
        return result
    }

    static func == (lhs: WriteSet, rhs: WriteSet) -> Bool {
        let count = max(lhs.words.count, rhs.words.count)
        return (0..<count).allSatisfy { (lhs.words.indices.contains($0) ? lhs.words[$0] : 0) == (rhs.words.indices.contains($0) ? rhs.words[$0] : 0) }
    }
}
