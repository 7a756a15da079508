/// What a device sends the hub: its changes and, implicitly, its acknowledgement.
///
/// `delta` is computed for the context the hub last *reported* to the device (never a
/// guessed one), and carries the device's whole context, which serves as its
/// acknowledgement for tombstone collection.
public struct SyncPush: Hashable, Sendable {
    /// The account the device syncs; the hub keeps one state per account.
    public var account: AccountID
    /// The device that sent the push.
    public var device: ReplicaID
    /// The device's changes the hub lacks, with the device's whole context.
    public var delta: ReplicatedMap.Delta
    /// Whether the device has joined the full state the hub sent it since its last
    /// request. A returning device keeps getting full states until it says so: its
    /// context alone cannot show it, since it may already cover the hub's context while
    /// still holding what the hub collected during its absence.
    public var acknowledgesFullState: Bool

    /// Creates a push; ``DeviceSyncMachine`` makes it for a device.
    public init(account: AccountID, device: ReplicaID, delta: ReplicatedMap.Delta, acknowledgesFullState: Bool = false) {
        self.account = account
        self.device = device
        self.delta = delta
        self.acknowledgesFullState = acknowledgesFullState
    }
}

/// What the hub answers: what the device lacks, the stable frontier, and the keys whose
/// writes it overrode to keep the quota.
public struct SyncReply: Hashable, Sendable {
    /// How the device must take `delta`.
    public enum Kind: UInt8, Hashable, Sendable {
        /// Join key by key (the usual case).
        case delta = 0
        /// The hub's whole state, for a device returning after retirement: join it
        /// whole, dropping what the hub has seen and no longer has.
        case fullState = 1
    }

    /// The account the reply belongs to; a device of another account ignores it.
    public var account: AccountID
    /// How the device must take ``delta``.
    public var kind: Kind
    /// The changes, carrying the hub's whole context (the device's next push is computed
    /// for that context).
    public var delta: ReplicatedMap.Delta
    /// Tombstones covered by this frontier may be collected.
    public var stableFrontier: VersionVector
    /// Keys whose writes from this device broke the quota and were superseded by a
    /// compensating write of the hub, in UTF-8 byte order.
    public var rejectedKeys: [String]

    /// Creates a reply; ``HubSyncMachine`` makes it for a device.
    public init(account: AccountID, kind: Kind, delta: ReplicatedMap.Delta, stableFrontier: VersionVector, rejectedKeys: [String]) {
        self.account = account
        self.kind = kind
        self.delta = delta
        self.stableFrontier = stableFrontier
        self.rejectedKeys = rejectedKeys
    }
}

/// What a device sends the hub when it has nothing new: "I hold exactly the context and
/// the stable frontier you last sent me" (as a digest), so a steady-state exchange costs a
/// few dozen bytes.
///
/// The digest covers the frontier as well as the context: a device whose context did not
/// change but which never *received* the reply carrying a new frontier must not be told
/// it is up to date, or it would keep forever the tombstones the hub has dropped.
public struct SyncPoll: Hashable, Sendable {
    /// The account the device syncs.
    public var account: AccountID
    /// The device that polls.
    public var device: ReplicaID
    /// ``digest(context:stableFrontier:)`` of the hub context and stable frontier the
    /// device holds.
    public var digest: UInt64

    /// Creates a poll; ``DeviceSyncMachine`` makes it for a device.
    public init(account: AccountID, device: ReplicaID, digest: UInt64) {
        self.account = account
        self.device = device
        self.digest = digest
    }

    /// The digest a poll carries: a 64-bit FNV-1a digest of the canonical encodings of
    /// `context` then `stableFrontier`, equal on every platform.
    public static func digest(context: VersionVector, stableFrontier: VersionVector) -> UInt64 {
        var writer = BinaryWriter()
        context.encode(into: &writer)
        stableFrontier.encode(into: &writer)
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in writer.bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash
    }
}

/// A message of the sync protocol, with a versioned compact binary encoding.
///
/// Layout: a magic byte, the format version, a type byte, then the payload (see
/// ``ReplicatedMap/Delta/encoded()`` for deltas), and a CRC-32C of everything before it
/// (4 bytes, little-endian). Decoding untrusted bytes never traps: anything malformed,
/// damaged (``MalformedInput/Problem/damaged``), oversized or of an unknown version throws
/// ``ConvergeError/malformed(_:)``.
public enum SyncMessage: Hashable, Sendable {
    /// A device's changes, to the hub.
    case push(SyncPush)
    /// The hub's answer to a push or a poll.
    case reply(SyncReply)
    /// Device-to-device gossip of the mesh topology.
    case gossip(SyncGossip)
    /// A device with nothing new asks the hub for changes.
    case poll(SyncPoll)
    /// The hub's answer to a poll when the device already holds everything, in `account`.
    case upToDate(AccountID)

    /// The largest encoded message accepted or produced.
    public static let maximumEncodedBytes = 16 * 1024 * 1024
    /// The first byte of every message.
    public static let magic: UInt8 = 0xC7
    /// The current format version (2: a push carries its full-state acknowledgement, and
    /// a poll's digest covers the stable frontier; 3: every message ends with a CRC-32C).
    public static let formatVersion: UInt8 = 3

    private enum TypeTag: UInt8 {
        case push = 1
        case reply = 2
        case gossip = 3
        case poll = 4
        case upToDate = 5
    }

    /// The encoded message.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` if it would exceed
    ///   ``maximumEncodedBytes``: the transport must not send it.
    public func encoded() throws(ConvergeError) -> [UInt8] {
        var writer = BinaryWriter()
        writer.writeByte(Self.magic)
        writer.writeByte(Self.formatVersion)
        switch self {
        case .push(let push):
            writer.writeByte(TypeTag.push.rawValue)
            writer.writeString(push.account.rawValue)
            writer.writeString(push.device.rawValue)
            writer.writeByte(push.acknowledgesFullState ? 1 : 0)
            push.delta.encode(into: &writer)
        case .reply(let reply):
            writer.writeByte(TypeTag.reply.rawValue)
            writer.writeString(reply.account.rawValue)
            writer.writeByte(reply.kind.rawValue)
            reply.delta.encode(into: &writer)
            reply.stableFrontier.encode(into: &writer)
            writer.writeVarint(UInt64(reply.rejectedKeys.count))
            for key in reply.rejectedKeys { writer.writeString(key) }
        case .gossip(let gossip):
            writer.writeByte(TypeTag.gossip.rawValue)
            writer.writeString(gossip.account.rawValue)
            writer.writeString(gossip.sender.rawValue)
            writer.writeByte(gossip.wantsReply ? 1 : 0)
            gossip.delta.encode(into: &writer)
        case .poll(let poll):
            writer.writeByte(TypeTag.poll.rawValue)
            writer.writeString(poll.account.rawValue)
            writer.writeString(poll.device.rawValue)
            writer.writeFixed64(poll.digest)
        case .upToDate(let account):
            writer.writeByte(TypeTag.upToDate.rawValue)
            writer.writeString(account.rawValue)
        }
        guard writer.bytes.count + 4 <= Self.maximumEncodedBytes else {
            throw .malformed(.limitExceeded, "message of \(writer.bytes.count + 4) bytes exceeds the limit of \(Self.maximumEncodedBytes)")
        }
        return CRC32C.sealed(writer.bytes)
    }

    /// Decodes a message from untrusted bytes.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` or ``ConvergeError/invalidValue(_:)``.
    public init(encoded bytes: [UInt8], limits: DecodingLimits = DecodingLimits()) throws(ConvergeError) {
        guard bytes.count <= Self.maximumEncodedBytes else {
            throw .malformed(.limitExceeded, "message of \(bytes.count) bytes exceeds the limit of \(Self.maximumEncodedBytes)")
        }
        var header = BinaryReader(bytes)
        guard try header.readByte() == Self.magic else { throw .malformed(.notConverge, "not a Converge sync message (bad magic byte)", at: 0) }
        let version = try header.readByte()
        guard version == Self.formatVersion else { throw .malformed(.unsupportedVersion, "unsupported message format version \(version)", at: 1) }
        var reader = BinaryReader(try CRC32C.unsealed(bytes, what: "the message"))
        _ = try reader.readByte()
        _ = try reader.readByte()
        let tagByte = try reader.readByte()
        guard let tag = TypeTag(rawValue: tagByte) else { throw .malformed(.unknownTag, "unknown message type \(tagByte)", at: 2) }
        let account = try Self.readAccount(&reader)
        switch tag {
        case .push:
            let device = try Self.readReplica(&reader)
            let flag = try reader.readByte()
            guard flag <= 1 else { throw .malformed(.unknownTag, "invalid full-state acknowledgement flag \(flag)", at: reader.offset - 1) }
            self = .push(SyncPush(account: account, device: device, delta: try ReplicatedMap.Delta(from: &reader, limits: limits),
                                  acknowledgesFullState: flag == 1))
        case .poll:
            let device = try Self.readReplica(&reader)
            self = .poll(SyncPoll(account: account, device: device, digest: try reader.readFixed64()))
        case .upToDate:
            self = .upToDate(account)
        case .gossip:
            let sender = try Self.readReplica(&reader)
            let flag = try reader.readByte()
            guard flag <= 1 else { throw .malformed(.unknownTag, "invalid reply flag \(flag)", at: reader.offset - 1) }
            let delta = try ReplicatedMap.Delta(from: &reader, limits: limits)
            self = .gossip(SyncGossip(account: account, sender: sender, delta: delta, wantsReply: flag == 1))
        case .reply:
            let kindByte = try reader.readByte()
            guard let kind = SyncReply.Kind(rawValue: kindByte) else { throw .malformed(.unknownTag, "unknown reply kind \(kindByte)", at: reader.offset - 1) }
            let delta = try ReplicatedMap.Delta(from: &reader, limits: limits)
            let frontier = try VersionVector(from: &reader, limits: limits)
            let count = try reader.readCount(limit: limits.maximumKeys)
            var keys: [String] = []
            keys.reserveCapacity(count)
            for _ in 0..<count { keys.append(try reader.readString()) }
            self = .reply(SyncReply(account: account, kind: kind, delta: delta, stableFrontier: frontier, rejectedKeys: keys))
        }
        try reader.expectEnd()
    }

    private static func readReplica(_ reader: inout BinaryReader) throws(ConvergeError) -> ReplicaID {
        let at = reader.offset
        guard let replica = ReplicaID(try reader.readString(limit: ReplicaID.maximumLengthBytes)) else {
            throw .malformed(.invalidIdentifier, "invalid replica ID", at: at)
        }
        return replica
    }

    private static func readAccount(_ reader: inout BinaryReader) throws(ConvergeError) -> AccountID {
        let at = reader.offset
        guard let account = AccountID(try reader.readString(limit: AccountID.maximumLengthBytes)) else {
            throw .malformed(.invalidIdentifier, "invalid account ID", at: at)
        }
        return account
    }
}
