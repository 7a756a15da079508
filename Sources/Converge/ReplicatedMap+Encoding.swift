/// Bounds applied when decoding states and deltas from untrusted bytes.
public struct DecodingLimits: Hashable, Sendable {
    /// The most replicas in a context.
    public var maximumReplicas: Int
    /// The most keys.
    public var maximumKeys: Int
    /// The most siblings of one key.
    public var maximumSiblingsPerKey: Int

    /// Creates decoding limits; the defaults fit any state a quota admits.
    public init(maximumReplicas: Int = 4_096, maximumKeys: Int = 1_000_000, maximumSiblingsPerKey: Int = 4_096) {
        self.maximumReplicas = maximumReplicas
        self.maximumKeys = maximumKeys
        self.maximumSiblingsPerKey = maximumSiblingsPerKey
    }
}

extension VersionVector {
    /// The bytes ``encode(into:)`` writes (what a size budget needs, at every reply).
    package var encodedSize: Int {
        var size = BinaryWriter.varintSize(UInt64(entries.count))
        for (replica, counter) in entries {
            let length = replica.rawValue.utf8.count
            size += BinaryWriter.varintSize(UInt64(length)) + length + BinaryWriter.varintSize(counter)
        }
        return size
    }

    /// Appends the canonical encoding: the replicas in order, each with its counter.
    package func encode(into writer: inout BinaryWriter) {
        writer.writeVarint(UInt64(entries.count))
        for entry in entries {
            writer.writeString(entry.replica.rawValue)
            writer.writeVarint(entry.counter)
        }
    }

    /// Reads a canonically encoded version vector.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` for invalid or unordered replica IDs,
    ///   zero counters, or more than `limits.maximumReplicas` replicas.
    package init(from reader: inout BinaryReader, limits: DecodingLimits = DecodingLimits()) throws(ConvergeError) {
        self.init(sorted: try Self.decodeOrdered(from: &reader, limits: limits))
    }

    /// Reads the entries in their encoded (replica) order.
    static func decodeOrdered(from reader: inout BinaryReader, limits: DecodingLimits) throws(ConvergeError) -> [(replica: ReplicaID, counter: UInt64)] {
        let count = try reader.readCount(limit: limits.maximumReplicas, minimumElementBytes: 3)
        var entries: [(replica: ReplicaID, counter: UInt64)] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let at = reader.offset
            let raw = try reader.readBytes(limit: ReplicaID.maximumLengthBytes)
            guard let replica = raw.withUnsafeBufferPointer(ReplicaID.init(utf8:)) else {
                // Refused as reading it as text first would refuse it.
                let isText = raw.withUnsafeBufferPointer { String(validating: $0, as: UTF8.self) != nil }
                throw isText ? .malformed(.invalidIdentifier, "invalid replica ID", at: at) : .malformed(.invalidUTF8, "invalid UTF-8 in string", at: at)
            }
            if let last = entries.last, !(last.replica < replica) {
                throw .malformed(.nonCanonical, "replicas not in strictly increasing order", at: at)
            }
            let counter = try reader.readVarint()
            guard counter > 0 else { throw .malformed(.outOfRange, "zero counter for \(replica)", at: at) }
            guard counter <= Dot.maximumCounter else {
                throw .malformed(.outOfRange, "counter \(counter) of \(replica) exceeds the maximum \(Dot.maximumCounter)", at: at)
            }
            entries.append((replica, counter))
        }
        return entries
    }
}

extension ReplicatedMap.Delta {
    /// Appends the canonical encoding: the context, then the keys in UTF-8 byte order,
    /// each with its siblings in dot order. A sibling names its replica by index into the
    /// context, which always covers it.
    package func encode(into writer: inout BinaryWriter) {
        let replicas = context.sortedEntries.map(\.replica)
        var index: [ReplicaID: Int] = [:]
        for (position, replica) in replicas.enumerated() { index[replica] = position }
        context.encode(into: &writer)
        writer.writeVarint(UInt64(entries.count))
        for key in entries.keys.sortedByUTF8() {
            let siblings = entries[key]!
            writer.writeString(key)
            writer.writeVarint(UInt64(siblings.count))
            for sibling in siblings {
                guard let position = index[sibling.dot.replica] else {
                    preconditionFailure("sibling \(sibling.dot) not covered by the context")
                }
                writer.writeVarint(UInt64(position))
                writer.writeVarint(sibling.dot.counter)
                sibling.timestamp.encode(into: &writer)
                sibling.encodeValue(into: &writer)
            }
        }
    }

    /// The canonical encoding of a delta of one key, `key` with `siblings`, whose context
    /// is what the siblings' dots cover: the bytes of
    /// `Delta(entries: [key: siblings], context: ⋯).encoded()`, without building the
    /// delta (a storage writes one such record per key it changes).
    ///
    /// - Parameters:
    ///   - key: The key, spelled as it is written.
    ///   - siblings: Its siblings, in the order they are written.
    /// - Returns: The encoded delta.
    /// - Complexity: O(*s*²) in the siblings (a key has few); O(*s* log *s*) past eight.
    package static func encodedEntry(forKey key: String, siblings: [Sibling]) -> [UInt8] {
        guard siblings.count <= 8 else {
            var context = VersionVector()
            for sibling in siblings { context.raise(sibling.dot.replica, to: sibling.dot.counter) }
            return Self(entries: [key: siblings], context: context).encoded()
        }
        // The context: each replica of the siblings with its highest counter, in replica order.
        var replicas: [(replica: ReplicaID, counter: UInt64)] = []
        for sibling in siblings {
            if let at = replicas.firstIndex(where: { $0.replica == sibling.dot.replica }) {
                replicas[at].counter = max(replicas[at].counter, sibling.dot.counter)
            } else {
                replicas.append((sibling.dot.replica, sibling.dot.counter))
            }
        }
        replicas.sort { $0.replica < $1.replica }
        var writer = BinaryWriter()
        writer.writeVarint(UInt64(replicas.count))
        for entry in replicas {
            writer.writeString(entry.replica.rawValue)
            writer.writeVarint(entry.counter)
        }
        writer.writeVarint(1)
        writer.writeString(key)
        writer.writeVarint(UInt64(siblings.count))
        for sibling in siblings {
            writer.writeVarint(UInt64(replicas.firstIndex { $0.replica == sibling.dot.replica }!))
            writer.writeVarint(sibling.dot.counter)
            sibling.timestamp.encode(into: &writer)
            sibling.encodeValue(into: &writer)
        }
        return writer.bytes
    }

    /// The canonical encoding.
    public func encoded() -> [UInt8] {
        var writer = BinaryWriter()
        encode(into: &writer)
        return writer.bytes
    }

    /// Reads a canonically encoded delta (or state) from untrusted bytes.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` for anything out of order, out of bounds
    ///   or not covered by the context; ``ConvergeError/invalidValue(_:)`` for bad values.
    package init(from reader: inout BinaryReader, limits: DecodingLimits = DecodingLimits()) throws(ConvergeError) {
        let replicas = try VersionVector.decodeOrdered(from: &reader, limits: limits)
        let context = VersionVector(sorted: replicas)
        let keyCount = try reader.readCount(limit: limits.maximumKeys, minimumElementBytes: 8)
        var entries: [String: [Sibling]] = [:]
        entries.reserveCapacity(keyCount)
        var previousKey: String?
        for _ in 0..<keyCount {
            let at = reader.offset
            let key = try reader.readString()
            guard !key.isEmpty else { throw .malformed(.invalidEntry, "empty key", at: at) }
            if let previousKey, !previousKey.precedesInUTF8Order(key) {
                throw .malformed(.nonCanonical, "keys not in strictly increasing byte order", at: at)
            }
            // Two spellings of one Unicode text ("é" composed and decomposed) are one key to
            // Swift: taking both would silently drop one's siblings.
            guard entries[key] == nil else {
                throw .malformed(.nonCanonical, "the key \"\(key)\" appears twice, spelled in two Unicode normal forms", at: at)
            }
            let siblingCount = try reader.readCount(limit: limits.maximumSiblingsPerKey, minimumElementBytes: 5)
            guard siblingCount > 0 else { throw .malformed(.invalidEntry, "key without siblings", at: at) }
            var siblings: [Sibling] = []
            siblings.reserveCapacity(siblingCount)
            for _ in 0..<siblingCount {
                let siblingAt = reader.offset
                let position = try reader.readVarint()
                guard position < UInt64(replicas.count) else { throw .malformed(.outOfRange, "replica index out of range", at: siblingAt) }
                let replica = replicas[Int(position)]
                let counter = try reader.readVarint()
                guard counter >= 1, counter <= replica.counter else {
                    throw .malformed(.notCovered, "dot \(replica.replica):\(counter) not covered by the context", at: siblingAt)
                }
                let timestamp = try HybridTimestamp(from: &reader, at: siblingAt)
                let sibling = try Sibling(dot: Dot(replica: replica.replica, counter: counter), timestamp: timestamp,
                                          payloadFrom: &reader, at: siblingAt)
                if let last = siblings.last, !(last.dot < sibling.dot) {
                    throw .malformed(.nonCanonical, "siblings not in strictly increasing dot order", at: siblingAt)
                }
                siblings.append(sibling)
            }
            entries[key] = siblings
            previousKey = key
        }
        self.init(entries: entries, context: context)
    }

    /// Decodes a delta that must take up all of `bytes`.
    public init(encoded bytes: [UInt8], limits: DecodingLimits = DecodingLimits()) throws(ConvergeError) {
        var reader = BinaryReader(bytes)
        try self.init(from: &reader, limits: limits)
        try reader.expectEnd()
    }
}

extension ReplicatedMap {
    /// The canonical encoding of the whole state (that of ``asDelta``): equal states
    /// encode to equal bytes, so it serves as a digest and a snapshot.
    public func encoded() -> [UInt8] { asDelta.encoded() }

    /// Decodes a state encoded by ``encoded()``.
    public init(encoded bytes: [UInt8], limits: DecodingLimits = DecodingLimits()) throws(ConvergeError) {
        let delta = try Delta(encoded: bytes, limits: limits)
        try self.init(entries: delta.entries, context: delta.context)
    }
}

extension HybridTimestamp {
    /// Appends the encoding: wall milliseconds and logical counter, as varints.
    package func encode(into writer: inout BinaryWriter) {
        writer.writeVarint(wallMilliseconds)
        writer.writeVarint(UInt64(logical))
    }

    /// Reads a timestamp, refusing a wall time past ``maximumWallMilliseconds`` and a
    /// logical counter past `UInt32.max`.
    package init(from reader: inout BinaryReader, at offset: Int? = nil) throws(ConvergeError) {
        let at = offset ?? reader.offset
        let wall = try reader.readVarint()
        guard wall <= Self.maximumWallMilliseconds else {
            throw .malformed(.outOfRange, "timestamp \(wall) ms lies past the year 9999", at: at)
        }
        let logical = try reader.readVarint()
        guard logical <= UInt64(UInt32.max) else { throw .malformed(.outOfRange, "logical clock out of range", at: at) }
        self.init(wallMilliseconds: wall, logical: UInt32(logical))
    }
}
