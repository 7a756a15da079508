/// A set of the reference model's writes, by their number in ``ReferenceModel/writes`` (the
/// order the simulator performed them in): what a replica, a disk, a backup or a message
/// knows, and what a write saw.
///
/// The model names writes by number rather than by dot because a dot can name two writes:
/// two devices on copies of one disk (a clone) write under one replica ID, and a device
/// restored from a backup writes again under dots it used before. A number names one write
/// for the whole run, whichever lineage of a disk made it.
///
/// A bitset whose leading all-ones words are not stored but counted (``completeCount``):
/// what a replica knows, what a message carries and what a write saw is nearly always every
/// write up to a recent one, and a few beyond. Stored whole, each write's past grew with
/// the run, and a run of *n* writes held *n*²/128 bytes of pasts and spent as long reading
/// them (a 30,000-operation run took 100 MB and 33 s of CPU, the 100,000-operation run did
/// not finish in minutes); stored so, a set costs what it holds beyond its complete prefix.
/// The complete prefix is kept as long as it can be (``absorbCompleteWords()``), so two equal
/// sets have equal prefixes.
struct WriteSet: Equatable {
    /// Words `0..<completeWords` hold all ones.
    private var completeWords = 0
    /// Word `completeWords + i` is `words[i]`; `words.first` is never all ones.
    private var words: [UInt64] = []

    init() {}

    init<S: Sequence>(_ numbers: S) where S.Element == Int {
        for number in numbers { insert(number) }
    }

    /// Every number below this one is in the set.
    var completeCount: Int { completeWords << 6 }

    /// Word `index` of the whole bitset.
    private func word(_ index: Int) -> UInt64 {
        if index < completeWords { return ~0 }
        let stored = index - completeWords
        return stored < words.count ? words[stored] : 0
    }

    /// One past the last word that may hold a member.
    private var endWord: Int { completeWords + words.count }

    func contains(_ number: Int) -> Bool {
        word(number >> 6) & (1 << UInt64(number & 63)) != 0
    }

    mutating func insert(_ number: Int) {
        let stored = number >> 6 - completeWords
        guard stored >= 0 else { return }
        if stored >= words.count { words.append(contentsOf: repeatElement(0, count: stored - words.count + 1)) }
        words[stored] |= 1 << UInt64(number & 63)
        if stored == 0 { absorbCompleteWords() }
    }

    mutating func formUnion(_ other: WriteSet) {
        if other.completeWords > completeWords {
            // Our words below the other's complete prefix add nothing.
            words.removeFirst(min(words.count, other.completeWords - completeWords))
            completeWords = other.completeWords
        }
        let skipped = completeWords - other.completeWords
        let needed = other.words.count - skipped
        if needed > 0 {
            if needed > words.count { words.append(contentsOf: repeatElement(0, count: needed - words.count)) }
            for index in 0..<needed { words[index] |= other.words[skipped + index] }
        }
        absorbCompleteWords()
    }

    func union(_ other: WriteSet) -> WriteSet {
        var result = self
        result.formUnion(other)
        return result
    }

    /// The numbers in both sets.
    ///
    /// - Complexity: O(the words of either beyond the shorter complete prefix).
    func intersection(_ other: WriteSet) -> WriteSet {
        var result = WriteSet()
        result.completeWords = min(completeWords, other.completeWords)
        let end = min(endWord, other.endWord)
        if end > result.completeWords {
            result.words = (result.completeWords..<end).map { word($0) & other.word($0) }
        }
        result.absorbCompleteWords()
        return result
    }

    func filter(_ isIncluded: (Int) -> Bool) -> WriteSet {
        var result = WriteSet()
        for number in members where isIncluded(number) { result.insert(number) }
        return result
    }

    var isEmpty: Bool { completeWords == 0 && words.allSatisfy { $0 == 0 } }

    /// The numbers in the set, in increasing order.
    var members: [Int] { members(fromWord: 0) { _ in 0 } }

    /// The numbers at or above ``completeCount``, in increasing order.
    var membersBeyondCompletePrefix: [Int] { members(fromWord: completeWords) { _ in 0 } }

    /// The numbers in the set and not in `other`, in increasing order.
    ///
    /// - Complexity: O(the words of this set beyond `other`'s complete prefix).
    func members(notIn other: WriteSet) -> [Int] {
        members(fromWord: other.completeWords) { other.word($0) }
    }

    /// The numbers of words `first...`, less the bits `excluded` gives for each word.
    private func members(fromWord first: Int, excluding excluded: (Int) -> UInt64) -> [Int] {
        var result: [Int] = []
        guard first < endWord else { return result }
        for index in first..<endWord {
            var bits = word(index) & ~excluded(index)
            while bits != 0 {
                result.append(index << 6 + bits.trailingZeroBitCount)
                bits &= bits - 1
            }
        }
        return result
    }

    /// Counts the leading all-ones words into the complete prefix, which keeps the set in
    /// its one form (and so makes `==` compare the stored words).
    private mutating func absorbCompleteWords() {
        let complete = words.prefix { $0 == ~0 }.count
        guard complete > 0 else { return }
        words.removeFirst(complete)
        completeWords += complete
    }

    static func == (lhs: WriteSet, rhs: WriteSet) -> Bool {
        guard lhs.completeWords == rhs.completeWords else { return false }
        let count = max(lhs.words.count, rhs.words.count)
        return (0..<count).allSatisfy { (lhs.words.indices.contains($0) ? lhs.words[$0] : 0) == (rhs.words.indices.contains($0) ? rhs.words[$0] : 0) }
    }
}
