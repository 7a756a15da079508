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
    /// The last key of the full-state page the device joined, when the full state it
    /// acknowledges was one page of several (``SyncReply/keys``) and not the last; `nil`
    /// when it reached the last key.
    public var acknowledgedThrough: String?
    /// Whether the delta is one page of the device's changes, more to come: its context
    /// then claims what the page carries, not what the device has sent of all its writes,
    /// so the hub does not count it as an acknowledgement for tombstone collection (the
    /// device may still hold writes concurrent with a tombstone its context covers).
    public var moreToCome: Bool
    /// The keys of a page whose entries leave out siblings beyond its context, in UTF-8
    /// order: the hub joins them without dropping anything (see
    /// ``ReplicatedMap/apply(_:partialKeys:)``). Empty unless ``moreToCome``.
    public var partialKeys: [String]
    /// The context the device believes the hub holds (what the hub's replies reported),
    /// for which `delta` was computed: `delta` leaves out every write it covers. A hub that
    /// holds less (restored from an older copy, or another hub under the same account)
    /// must not take the push, or those writes would be missing for good: it answers
    /// without applying it, under its own context, and the device pushes again from there
    /// (see ``DeviceSyncMachine/receive(_:)``). Empty for a device that has heard nothing.
    public var basis: VersionVector
    /// The keys for which `delta` is the device's whole state, when the push *repairs* a
    /// hub found holding less than it reported (restored from an older copy): the hub then
    /// drops, in these keys, every sibling the delta's context covers and the delta lacks,
    /// as a join of full states would. A removal whose tombstone was collected can travel
    /// no other way. The delta is a page of ``ReplicatedMap/fullStatePage(after:within:maximumBytes:)``
    /// under the context the device believes the hub holds, so it adds nothing. `nil` for
    /// a push of changes.
    public var fullStateKeys: KeySpan?
    /// Which write sessions issued the device's own recent counters, from the highest the
    /// hub acknowledged (see ``WriterSessions``): the hub compares them with the runs it
    /// recorded for the device on every counter both reach, and if they differ it takes
    /// nothing and answers with its tip alone (``SyncReply/sessionTip``). Empty when the
    /// device records none.
    public var writerSessions = WriterSessions()
    /// The digest (``SyncPoll/digest(context:stableFrontier:)``) of the hub context and
    /// stable frontier the device holds, when it takes a reply written relative to them
    /// (``SyncReply/relativeTo``), as a poll that accepts one does: the reply then costs
    /// bytes in the changes alone instead of in every replica of the context. A push that
    /// names one is written in format version 6, which a hub built before it refuses; a
    /// store then sends the push again without it (see ``ReplicatedKeyValueStore/sync()``).
    /// `nil` for a device that takes only whole replies.
    public var relativeReplyDigest: UInt64?

    /// Creates a push; ``DeviceSyncMachine`` makes it for a device.
    public init(account: AccountID, device: ReplicaID, delta: ReplicatedMap.Delta, acknowledgesFullState: Bool = false,
                acknowledgedThrough: String? = nil, moreToCome: Bool = false, partialKeys: [String] = [], basis: VersionVector = VersionVector(),
                fullStateKeys: KeySpan? = nil) {
        self.basis = basis
        self.fullStateKeys = moreToCome ? nil : fullStateKeys
        self.account = account
        self.device = device
        self.delta = delta
        self.acknowledgesFullState = acknowledgesFullState
        self.acknowledgedThrough = acknowledgesFullState ? acknowledgedThrough : nil
        self.moreToCome = moreToCome
        self.partialKeys = moreToCome ? partialKeys : []
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
        /// whole, dropping what the hub has seen and no longer has; or, when it is too
        /// large for one message, one page of it that answers for the keys of ``keys``.
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
    /// The keys a full state answers for: ``KeySpan/all``, unless it is one page of a full
    /// state too large for one message (its entries then lie in this span). Always
    /// ``KeySpan/all`` for a delta.
    public var keys: KeySpan
    /// Whether a delta is one page of a change too large for one message: the device's
    /// next request must then be a push (whose context tells the hub where to go on), not
    /// a poll. Always `false` for a full state.
    public var moreToCome: Bool
    /// The keys of a page whose entries leave out siblings beyond its context, in UTF-8
    /// order: the device joins them without dropping anything (see
    /// ``ReplicatedMap/apply(_:partialKeys:)``). Empty unless ``moreToCome``.
    public var partialKeys: [String]
    /// The keys of the device's repairing push (``SyncPush/fullStateKeys``) the hub joined
    /// before it answered, so the device goes on with the next keys; `nil` otherwise.
    public var repairedKeys: KeySpan?
    /// Writes of the hub's own ID (its incarnations) that the device's push claims to have
    /// seen and the hub does not know: it wrote them, then was restored from an older copy.
    /// No replica can send them to it again if none holds them, so the device counts them as
    /// seen by the hub when it decides whether the hub has seen everything it has (before it
    /// repairs the hub, see ``DeviceSyncMachine/repairsHub``). Empty otherwise; the hub
    /// stores nothing of it.
    public var lostHubWrites = VersionVector()
    /// The write session that issued the highest counter of the device the hub holds, as
    /// the device's pushes named it (see ``WriterSessions``), or `nil` if none did. A
    /// device whose own record names another session for that counter has had its counters
    /// reused (it is a restored or copied store): it starts a new incarnation and applies
    /// nothing of the reply. The hub does not take a push whose runs disagree with its
    /// record on any counter both reach; it answers with the tip and, as the context, how far
    /// it holds the device's writes.
    public var sessionTip: WriterSessions.Tip?
    /// The device (writer ID) whose request this answers, or `nil` if the hub did not say.
    /// A device that started a new incarnation since it asked is another device, and
    /// ignores it: the answer was computed for writes it no longer holds under that ID.
    public var device: ReplicaID?
    /// When set, the reply is written relative to what the device holds: the digest
    /// (``SyncPoll/digest(context:stableFrontier:)``) of the hub context and stable frontier
    /// the device's poll or push showed it holds, and ``delta``'s context and ``stableFrontier`` then
    /// hold only their entries that differ from those (the context also those of the
    /// replicas whose writes the delta carries). The device joins them with what it holds,
    /// and ignores the reply if it no longer holds exactly that (see
    /// ``resolved(againstContext:stableFrontier:)``). `nil` for a reply that carries both
    /// whole. A hub makes one only for a poll or push that accepts it
    /// (``SyncPoll/acceptsRelativeReply``, ``SyncPush/relativeReplyDigest``).
    public internal(set) var relativeTo: UInt64?

    /// Creates a reply; ``HubSyncMachine`` makes it for a device.
    public init(account: AccountID, kind: Kind, delta: ReplicatedMap.Delta, stableFrontier: VersionVector, rejectedKeys: [String],
                keys: KeySpan = .all, moreToCome: Bool = false, partialKeys: [String] = [], repairedKeys: KeySpan? = nil,
                lostHubWrites: VersionVector = VersionVector()) {
        self.repairedKeys = repairedKeys
        self.lostHubWrites = lostHubWrites
        self.account = account
        self.kind = kind
        self.delta = delta
        self.stableFrontier = stableFrontier
        self.rejectedKeys = rejectedKeys
        self.keys = kind == .fullState ? keys : .all
        self.moreToCome = kind == .delta && moreToCome
        self.partialKeys = self.moreToCome ? partialKeys : []
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
    /// Whether the device takes a reply written relative to what `digest` names
    /// (``SyncReply/relativeTo``), which costs bytes in the changes alone instead of in every
    /// replica of the context. A poll that says so is written in format version 6, which a
    /// hub built before it refuses; a store then sends the poll again without it (see
    /// ``ReplicatedKeyValueStore/sync()``).
    public var acceptsRelativeReply: Bool

    /// Creates a poll; ``DeviceSyncMachine`` makes it for a device.
    public init(account: AccountID, device: ReplicaID, digest: UInt64, acceptsRelativeReply: Bool = false) {
        self.account = account
        self.device = device
        self.digest = digest
        self.acceptsRelativeReply = acceptsRelativeReply
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
    /// a poll's digest covers the stable frontier; 3: every message ends with a CRC-32C;
    /// 4: gossip may name the writer ID of its sessions, its recipient and the recipient's
    /// tip, flags 4, 8 and 16; 5: gossip may carry the session records of other writer IDs
    /// it relays, flag 32, withdrawn ones, flag 64, and its basis, flag 128; 6: a poll ends
    /// with a flags byte, 1 when it accepts a relative reply, a push may accept one too,
    /// flag 64, the digest following its sessions, and a reply may be relative, 0x08 on its
    /// kind byte, the digest it is relative to following the device answered).
    /// Each message is written in the oldest version that can express it
    /// (``writtenFormatVersion``).
    ///
    /// A version says what its messages may contain: a reader of version 4 refuses the
    /// flags of version 5 as unknown, so gossip that carries them must say version 5, and a
    /// message that says an older version is refused if it carries a flag that version
    /// did not have.
    public static let formatVersion: UInt8 = 6
    /// The oldest version written (4): what a hub or peer built before version 5 reads.
    public static let oldestWrittenFormatVersion: UInt8 = 4
    /// The oldest format version still read (3). Every version from it to
    /// ``formatVersion`` is read, as the current one without the gossip flags added since
    /// (version 3: without flags 4 to 128; version 4: without 32, 64 and 128). A re-encoded
    /// message of an older version is written in its ``writtenFormatVersion``.
    public static let oldestReadableFormatVersion: UInt8 = 3

    /// The gossip flags that format `version` knows: 1 and 2 in version 3, up to 16 in
    /// version 4, all eight since version 5.
    private static func gossipFlags(of version: UInt8) -> UInt8 {
        switch version {
        case 3: 0b0000_0011
        case 4: 0b0001_1111
        default: 0b1111_1111
        }
    }

    /// The push flags that format `version` knows: up to 32 before version 6, 64 too since.
    private static func pushFlags(of version: UInt8) -> UInt8 {
        version >= 6 ? 0b0111_1111 : 0b0011_1111
    }

    private enum TypeTag: UInt8 {
        case push = 1
        case reply = 2
        case gossip = 3
        case poll = 4
        case upToDate = 5
    }

    /// The version this message is written in: the oldest that can express it, so that a
    /// hub or peer not yet upgraded reads every message that needs nothing newer. Version 5
    /// for gossip that relays or withdraws session records or names its basis; version 6
    /// for a poll or push that accepts a relative reply, and for a relative reply (a hub makes
    /// one only for such a request, so a device that reads it sent it); ``oldestWrittenFormatVersion``
    /// otherwise.
    public var writtenFormatVersion: UInt8 {
        switch self {
        case .gossip(let gossip) where !gossip.relayedSessions.isEmpty || !gossip.withdrawnSessions.isEmpty || gossip.basis != nil:
            return 5
        case .poll(let poll) where poll.acceptsRelativeReply:
            return 6
        case .push(let push) where push.relativeReplyDigest != nil:
            return 6
        case .reply(let reply) where reply.relativeTo != nil:
            return 6
        default:
            return Self.oldestWrittenFormatVersion
        }
    }

    /// The encoded message, in its ``writtenFormatVersion``.
    ///
    /// - Throws: ``ConvergeError/malformed(_:)`` if it would exceed
    ///   ``maximumEncodedBytes``: the transport must not send it.
    public func encoded() throws(ConvergeError) -> [UInt8] {
        var writer = BinaryWriter()
        writer.writeByte(Self.magic)
        writer.writeByte(writtenFormatVersion)
        switch self {
        case .push(let push):
            writer.writeByte(TypeTag.push.rawValue)
            writer.writeString(push.account.rawValue)
            writer.writeString(push.device.rawValue)
            // Flags: 1, a full state acknowledged (its last page, or the page through the key
            // that follows if 2 is set too); 4, more pages to come.
            var flags: UInt8 = push.acknowledgesFullState ? 1 : 0
            if push.acknowledgedThrough != nil { flags |= 2 }
            if push.moreToCome { flags |= 4 }
            // 8: the basis follows (absent when empty, so a first push reads as before).
            if !push.basis.isEmpty { flags |= 8 }
            // 16: the device's whole state for a span of keys (a repair), its bounds following
            // the basis.
            if push.fullStateKeys != nil { flags |= 16 }
            // 32: the device's write sessions follow the span.
            if !push.writerSessions.isEmpty { flags |= 32 }
            // Since version 6, 64: the push takes a relative reply, the digest it names
            // following the sessions.
            if push.relativeReplyDigest != nil { flags |= 64 }
            writer.writeByte(flags)
            if let through = push.acknowledgedThrough { writer.writeString(through) }
            if !push.basis.isEmpty { push.basis.encode(into: &writer) }
            if let span = push.fullStateKeys { Self.writeSpan(span, into: &writer) }
            if !push.writerSessions.isEmpty { push.writerSessions.encode(into: &writer) }
            if let digest = push.relativeReplyDigest { writer.writeFixed64(digest) }
            push.delta.encode(into: &writer)
            if push.moreToCome { Self.writeKeys(push.partialKeys, into: &writer) }
        case .reply(let reply):
            writer.writeByte(TypeTag.reply.rawValue)
            writer.writeString(reply.account.rawValue)
            // Kinds 0 and 1; 2: a page of a full state, its span's bounds following; 3: a
            // page of a delta, more to come.
            // 0x80 on the kind: the span of a repairing push the hub joined follows; 0x40: the
            // hub's lost writes follow (after the span); 0x20: the session tip follows (after them);
            // 0x10: the device answered follows (after the tip). Since version 6, 0x08: the
            // reply is relative, the digest it is relative to following the device.
            let repaired: UInt8 = (reply.repairedKeys == nil ? 0 : 0x80) | (reply.lostHubWrites.isEmpty ? 0 : 0x40)
                | (reply.sessionTip == nil ? 0 : 0x20) | (reply.device == nil ? 0 : 0x10) | (reply.relativeTo == nil ? 0 : 0x08)
            if reply.moreToCome {
                writer.writeByte(3 | repaired)
            } else if reply.kind == .fullState && reply.keys != .all {
                writer.writeByte(2 | repaired)
                Self.writeSpan(reply.keys, into: &writer)
            } else {
                writer.writeByte(reply.kind.rawValue | repaired)
            }
            if let span = reply.repairedKeys { Self.writeSpan(span, into: &writer) }
            if !reply.lostHubWrites.isEmpty { reply.lostHubWrites.encode(into: &writer) }
            if let tip = reply.sessionTip {
                writer.writeVarint(tip.counter)
                writer.writeFixed64(tip.session)
            }
            if let device = reply.device { writer.writeString(device.rawValue) }
            if let base = reply.relativeTo { writer.writeFixed64(base) }
            reply.delta.encode(into: &writer)
            reply.stableFrontier.encode(into: &writer)
            writer.writeVarint(UInt64(reply.rejectedKeys.count))
            for key in reply.rejectedKeys { writer.writeString(key) }
            if reply.moreToCome { Self.writeKeys(reply.partialKeys, into: &writer) }
        case .gossip(let gossip):
            writer.writeByte(TypeTag.gossip.rawValue)
            writer.writeString(gossip.account.rawValue)
            writer.writeString(gossip.sender.rawValue)
            // 1: wants a reply; 2: the sender's write sessions follow; 4: the sender's writer ID
            // follows them; 8: the recipient's writer ID follows; 16 (with 8): the recipient's
            // tip follows it (counter and session). Since version 5: 32, the relayed session
            // records follow it; 64, the withdrawn ones follow them; 128, the basis follows them.
            let sessionsWriter = gossip.writer == gossip.sender ? nil : gossip.writer
            let tip = gossip.recipient == nil ? nil : gossip.recipientTip
            writer.writeByte((gossip.wantsReply ? 1 : 0) | (gossip.writerSessions.isEmpty ? 0 : 2) | (sessionsWriter == nil ? 0 : 4)
                | (gossip.recipient == nil ? 0 : 8) | (tip == nil ? 0 : 16) | (gossip.relayedSessions.isEmpty ? 0 : 32)
                | (gossip.withdrawnSessions.isEmpty ? 0 : 64) | (gossip.basis == nil ? 0 : 128))
            if !gossip.writerSessions.isEmpty { gossip.writerSessions.encode(into: &writer) }
            if let sessionsWriter { writer.writeString(sessionsWriter.rawValue) }
            if let recipient = gossip.recipient { writer.writeString(recipient.rawValue) }
            if let tip {
                writer.writeVarint(tip.counter)
                writer.writeFixed64(tip.session)
            }
            if !gossip.relayedSessions.isEmpty {
                writer.writeVarint(UInt64(gossip.relayedSessions.count))
                for record in gossip.relayedSessions { record.encode(into: &writer) }
            }
            if !gossip.withdrawnSessions.isEmpty {
                writer.writeVarint(UInt64(gossip.withdrawnSessions.count))
                for record in gossip.withdrawnSessions { record.encode(into: &writer) }
            }
            if let basis = gossip.basis { basis.encode(into: &writer) }
            gossip.delta.encode(into: &writer)
        case .poll(let poll):
            writer.writeByte(TypeTag.poll.rawValue)
            writer.writeString(poll.account.rawValue)
            writer.writeString(poll.device.rawValue)
            writer.writeFixed64(poll.digest)
            // Since version 6 (and only then): flags, 1 when it accepts a relative reply.
            if poll.acceptsRelativeReply { writer.writeByte(1) }
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
        // Versions 3 and 4 (written before the gossip flags of later versions) are still read:
        // a shared folder holds files older versions wrote, and older peers still send them.
        guard (Self.oldestReadableFormatVersion...Self.formatVersion).contains(version) else {
            throw .malformed(.unsupportedVersion, "unsupported message format version \(version)", at: 1)
        }
        var reader = BinaryReader(try CRC32C.unsealed(bytes, what: "the message"))
        _ = try reader.readByte()
        _ = try reader.readByte()
        let tagByte = try reader.readByte()
        guard let tag = TypeTag(rawValue: tagByte) else { throw .malformed(.unknownTag, "unknown message type \(tagByte)", at: 2) }
        let account = try Self.readAccount(&reader)
        switch tag {
        case .push:
            let device = try Self.readReplica(&reader)
            let flags = try reader.readByte()
            // 64 is the only thing a push of version 6 may say that one of version 4 cannot.
            guard flags & ~Self.pushFlags(of: version) == 0, flags & 3 != 2, flags & 20 != 20 else {
                throw .malformed(.unknownTag, "invalid push flags \(flags) in message format version \(version)", at: reader.offset - 1)
            }
            guard version < 6 || flags & 64 != 0 else {
                throw .malformed(.nonCanonical, "a push that takes no relative reply is written in format version 4, not 6", at: 1)
            }
            let through = flags & 2 != 0 ? try reader.readString() : nil
            let basisAt = reader.offset
            let basis = flags & 8 != 0 ? try VersionVector(from: &reader, limits: limits) : VersionVector()
            guard flags & 8 == 0 || !basis.isEmpty else {
                throw .malformed(.nonCanonical, "an empty push basis is left out, not sent", at: basisAt)
            }
            let span = flags & 16 != 0 ? try Self.readSpan(&reader) : nil
            let sessionsAt = reader.offset
            let sessions = flags & 32 != 0 ? try WriterSessions(from: &reader) : WriterSessions()
            guard flags & 32 == 0 || !sessions.isEmpty else {
                throw .malformed(.nonCanonical, "empty write sessions are left out, not sent", at: sessionsAt)
            }
            let relativeReplyDigest = flags & 64 != 0 ? try reader.readFixed64() : nil
            let entriesAt = reader.offset
            let delta = try ReplicatedMap.Delta(from: &reader, limits: limits)
            if let span, let outside = delta.entries.keys.sortedByUTF8().first(where: { !span.contains($0) }) {
                throw .malformed(.inconsistent, "the full-state push for keys \(span) holds the key \"\(outside)\" outside it", at: entriesAt)
            }
            let moreToCome = flags & 4 != 0
            let partialKeys = moreToCome ? try Self.readPartialKeys(&reader, of: delta, limits: limits) : []
            var push = SyncPush(account: account, device: device, delta: delta, acknowledgesFullState: flags & 1 != 0,
                                acknowledgedThrough: through, moreToCome: moreToCome, partialKeys: partialKeys, basis: basis,
                                fullStateKeys: span)
            push.writerSessions = sessions
            push.relativeReplyDigest = relativeReplyDigest
            self = .push(push)
        case .poll:
            let device = try Self.readReplica(&reader)
            let digest = try reader.readFixed64()
            // Version 6 added the flags byte, and says a poll with no flag set in version 4.
            let flags = version >= 6 ? try reader.readByte() : 0
            guard version < 6 || flags == 1 else {
                throw .malformed(flags == 0 ? .nonCanonical : .unknownTag, "invalid poll flags \(flags)", at: reader.offset - 1)
            }
            self = .poll(SyncPoll(account: account, device: device, digest: digest, acceptsRelativeReply: flags == 1))
        case .upToDate:
            self = .upToDate(account)
        case .gossip:
            let sender = try Self.readReplica(&reader)
            let flag = try reader.readByte()
            // A flag of a later version than the message's: a reader of that version would
            // refuse it, so no writer may label such gossip with it.
            let unknown = flag & ~Self.gossipFlags(of: version)
            guard unknown == 0 else {
                throw .malformed(.unknownTag, "invalid gossip flags \(flag): message format version \(version) has no flag \(UInt8(1) << unknown.trailingZeroBitCount)",
                                 at: reader.offset - 1)
            }
            // 16 needs the recipient whose tip it is.
            guard flag & 24 != 16 else {
                throw .malformed(.unknownTag, "invalid gossip flags \(flag)", at: reader.offset - 1)
            }
            let sessionsAt = reader.offset
            let sessions = flag & 2 != 0 ? try WriterSessions(from: &reader) : WriterSessions()
            guard flag & 2 == 0 || !sessions.isEmpty else {
                throw .malformed(.nonCanonical, "empty write sessions are left out, not sent", at: sessionsAt)
            }
            let writerAt = reader.offset
            let sessionsWriter = flag & 4 != 0 ? try Self.readReplica(&reader) : nil
            guard sessionsWriter != sender else {
                throw .malformed(.nonCanonical, "a writer ID equal to the sender's is left out, not sent", at: writerAt)
            }
            let recipient = flag & 8 != 0 ? try Self.readReplica(&reader) : nil
            var recipientTip: WriterSessions.Tip?
            if flag & 16 != 0 {
                let counterAt = reader.offset
                let counter = try reader.readVarint()
                guard counter > 0 else { throw .malformed(.nonCanonical, "a recipient's tip at counter 0", at: counterAt) }
                recipientTip = WriterSessions.Tip(counter: counter, session: try reader.readFixed64())
            }
            let relayed = flag & 32 != 0 ? try Self.readSessionRecords(&reader, limits: limits, byFirstCounter: false) : []
            let withdrawn = flag & 64 != 0 ? try Self.readSessionRecords(&reader, limits: limits, byFirstCounter: true) : []
            let basis = flag & 128 != 0 ? try VersionVector(from: &reader, limits: limits) : nil
            if let own = relayed.first(where: { $0.writer == sessionsWriter ?? sender }) {
                throw .malformed(.inconsistent, "gossip relays a record of its sender's own writer ID \(own.writer)", at: reader.offset)
            }
            let delta = try ReplicatedMap.Delta(from: &reader, limits: limits)
            var gossip = SyncGossip(account: account, sender: sender, delta: delta, wantsReply: flag & 1 != 0)
            gossip.writerSessions = sessions
            gossip.writer = sessionsWriter
            gossip.recipient = recipient
            gossip.recipientTip = recipientTip
            gossip.relayedSessions = relayed
            gossip.withdrawnSessions = withdrawn
            gossip.basis = basis
            self = .gossip(gossip)
        case .reply:
            let kindAt = reader.offset
            let kindAndFlag = try reader.readByte()
            // 0x08 (relative) is a flag of version 6; before, a kind no reader knows.
            guard kindAndFlag & 0x08 == 0 || version >= 6 else {
                throw .malformed(.unknownTag, "unknown reply kind \(kindAndFlag & 0x0F) in message format version \(version)", at: kindAt)
            }
            let kindByte = kindAndFlag & 0x07
            guard kindAndFlag & 0x08 == 0 || kindByte == SyncReply.Kind.delta.rawValue else {
                throw .malformed(.inconsistent, "only a whole delta reply is written relative to what the device holds", at: kindAt)
            }
            var kind = SyncReply.Kind.delta
            var span = KeySpan.all
            let moreToCome = kindByte == 3
            if moreToCome {
                kind = .delta
            } else if kindByte == 2 {
                kind = .fullState
                span = try Self.readSpan(&reader)
                guard span != .all else {
                    throw .malformed(.nonCanonical, "a full-state page must answer for some keys, not none or all", at: reader.offset)
                }
            } else {
                guard let decoded = SyncReply.Kind(rawValue: kindByte) else { throw .malformed(.unknownTag, "unknown reply kind \(kindByte)", at: reader.offset - 1) }
                kind = decoded
            }
            let repairedKeys = kindAndFlag & 0x80 != 0 ? try Self.readSpan(&reader) : nil
            let lostAt = reader.offset
            let lostHubWrites = kindAndFlag & 0x40 != 0 ? try VersionVector(from: &reader, limits: limits) : VersionVector()
            guard kindAndFlag & 0x40 == 0 || !lostHubWrites.isEmpty else {
                throw .malformed(.nonCanonical, "empty lost hub writes are left out, not sent", at: lostAt)
            }
            var tip: WriterSessions.Tip?
            if kindAndFlag & 0x20 != 0 {
                let counter = try reader.readVarint()
                tip = WriterSessions.Tip(counter: counter, session: try reader.readFixed64())
            }
            let device = kindAndFlag & 0x10 != 0 ? try Self.readReplica(&reader) : nil
            let relativeTo = kindAndFlag & 0x08 != 0 ? try reader.readFixed64() : nil
            let entriesAt = reader.offset
            let delta = try ReplicatedMap.Delta(from: &reader, limits: limits)
            if let outside = delta.entries.keys.sortedByUTF8().first(where: { !span.contains($0) }) {
                throw .malformed(.inconsistent, "the full-state page for keys \(span) holds the key \"\(outside)\" outside it", at: entriesAt)
            }
            let frontier = try VersionVector(from: &reader, limits: limits)
            let count = try reader.readCount(limit: limits.maximumKeys)
            var keys: [String] = []
            keys.reserveCapacity(count)
            for _ in 0..<count { keys.append(try reader.readString()) }
            let partialKeys = moreToCome ? try Self.readPartialKeys(&reader, of: delta, limits: limits) : []
            var reply = SyncReply(account: account, kind: kind, delta: delta, stableFrontier: frontier, rejectedKeys: keys, keys: span,
                                  moreToCome: moreToCome, partialKeys: partialKeys, repairedKeys: repairedKeys,
                                  lostHubWrites: lostHubWrites)
            reply.sessionTip = tip
            reply.device = device
            reply.relativeTo = relativeTo
            self = .reply(reply)
        }
        try reader.expectEnd()
    }

    /// Writes a span's two bounds, each a presence byte (0 or 1) and the key.
    private static func writeSpan(_ span: KeySpan, into writer: inout BinaryWriter) {
        for bound in [span.after, span.through] {
            writer.writeByte(bound == nil ? 0 : 1)
            if let bound { writer.writeString(bound) }
        }
    }

    /// Reads a span written by ``writeSpan(_:into:)``; one that holds no key is refused.
    private static func readSpan(_ reader: inout BinaryReader) throws(ConvergeError) -> KeySpan {
        var bounds: [String?] = []
        for _ in 0..<2 {
            let present = try reader.readByte()
            guard present <= 1 else { throw .malformed(.unknownTag, "invalid key bound flag \(present)", at: reader.offset - 1) }
            bounds.append(present == 1 ? try reader.readString() : nil)
        }
        let span = KeySpan(after: bounds[0], through: bounds[1])
        guard !span.isEmpty else { throw .malformed(.nonCanonical, "a span of keys that holds none", at: reader.offset) }
        return span
    }

    private static func writeKeys(_ keys: [String], into writer: inout BinaryWriter) {
        writer.writeVarint(UInt64(keys.count))
        for key in keys { writer.writeString(key) }
    }

    /// Reads a page's partial keys: keys of its delta, in strictly increasing UTF-8 order.
    private static func readPartialKeys(_ reader: inout BinaryReader, of delta: ReplicatedMap.Delta,
                                        limits: DecodingLimits) throws(ConvergeError) -> [String] {
        let count = try reader.readCount(limit: min(limits.maximumKeys, delta.entries.count))
        var keys: [String] = []
        keys.reserveCapacity(count)
        for _ in 0..<count {
            let at = reader.offset
            let key = try reader.readString()
            guard delta.entries[key] != nil else {
                throw .malformed(.inconsistent, "the partial key \"\(key)\" is not a key of the page", at: at)
            }
            if let last = keys.last, !last.precedesInUTF8Order(key) {
                throw .malformed(.nonCanonical, "partial keys not in strictly increasing byte order", at: at)
            }
            keys.append(key)
        }
        return keys
    }

    /// Reads gossip's relayed or withdrawn session records: a count (at least one), then
    /// each record, by strictly increasing writer ID, each of at most
    /// ``SessionRecord/maximumRelayedRuns`` runs (withdrawn ones: whole, strictly increasing
    /// in ``SessionRecord/canonicallyPrecedes(_:_:)``).
    private static func readSessionRecords(_ reader: inout BinaryReader, limits: DecodingLimits,
                                           byFirstCounter: Bool) throws(ConvergeError) -> [SessionRecord] {
        let at = reader.offset
        let count = try reader.readCount(limit: limits.maximumReplicas, minimumElementBytes: 13)
        guard count > 0 else { throw .malformed(.nonCanonical, "no session records are left out, not sent", at: at) }
        var records: [SessionRecord] = []
        for _ in 0..<count {
            let recordAt = reader.offset
            let record = try SessionRecord(from: &reader)
            if let last = records.last {
                let inOrder = byFirstCounter ? SessionRecord.canonicallyPrecedes(last, record) : last.writer < record.writer
                guard inOrder else { throw .malformed(.nonCanonical, "session records out of order or repeated", at: recordAt) }
            }
            guard byFirstCounter || record.runs.runs.count <= SessionRecord.maximumRelayedRuns else {
                throw .malformed(.limitExceeded, "a relayed session record of more than \(SessionRecord.maximumRelayedRuns) runs", at: recordAt)
            }
            records.append(record)
        }
        return records
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
        let text = try reader.readString(limit: AccountID.maximumLengthBytes)
        guard let account = AccountID(text) else {
            throw .malformed(.invalidIdentifier, "invalid account ID", at: at)
        }
        guard account.rawValue.utf8.elementsEqual(text.utf8) else {
            throw .malformed(.nonCanonical, "account ID not in Unicode normal form C", at: at)
        }
        return account
    }
}
