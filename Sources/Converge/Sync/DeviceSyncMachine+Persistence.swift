/// Persistence of a device's sync progress, so a device that restarts does not push its
/// whole state again: what the hub reported (its context and stable frontier) is kept in
/// the store's metadata, written in the same transaction as the reply that taught it.
///
/// Only what stays true across a restart is kept. What the hub reported only grows, so a
/// copy that is older than the truth only makes the next push larger. The acknowledgement
/// of a joined full state is not kept: an acknowledgement must go with the request right
/// after the join, and after a restart the hub may be waiting for another one; without
/// it, the hub sends the full state again, as it does when a request is lost.
extension DeviceSyncMachine {
    /// The version of ``encodedProgress()``'s format (2: with the repair of a hub found
    /// holding less than it reported; format 1 is still read).
    static let progressFormat: UInt8 = 2

    /// What the machine learnt from the hub, as a durable record: the format, the device
    /// and account it belongs to, the hub's context, its stable frontier, whether more
    /// pages of a delta are to come, and how far a repair of the hub got (0: none; 1: from
    /// the first key; 2: after the key that follows).
    package func encodedProgress() -> [UInt8] {
        var writer = BinaryWriter()
        writer.writeByte(Self.progressFormat)
        writer.writeString(device.rawValue)
        writer.writeString(account.rawValue)
        hubContext.encode(into: &writer)
        stableFrontier.encode(into: &writer)
        writer.writeByte(expectsMorePages ? 1 : 0)
        writer.writeByte(!repairsHub ? 0 : repairedThrough == nil ? 1 : 2)
        if repairsHub, let repairedThrough { writer.writeString(repairedThrough) }
        return writer.bytes
    }

    /// A machine for `device` and `account` that resumes from a record of
    /// ``encodedProgress()``, or `nil` if the record is of another device, another account,
    /// another format, or not well formed (the machine then starts from nothing reported,
    /// which only costs a larger first push).
    package init?(device: ReplicaID, account: AccountID, progress record: [UInt8]) {
        var reader = BinaryReader(record)
        do throws(ConvergeError) {
            let format = try reader.readByte()
            guard (1...Self.progressFormat).contains(format),
                  try reader.readString(limit: ReplicaID.maximumLengthBytes) == device.rawValue,
                  try reader.readString(limit: 4_096) == account.rawValue else { return nil }
            let hubContext = try VersionVector(from: &reader)
            let stableFrontier = try VersionVector(from: &reader)
            let expectsMorePages = try reader.readByte()
            let repair = format >= 2 ? try reader.readByte() : 0
            let repairedThrough = repair == 2 ? try reader.readString() : nil
            try reader.expectEnd()
            guard expectsMorePages <= 1, repair <= 2 else { return nil }
            self.init(device: device, account: account)
            self.hubContext = hubContext
            self.stableFrontier = stableFrontier
            self.expectsMorePages = expectsMorePages == 1
            self.repairsHub = repair != 0
            self.repairedThrough = repairedThrough
        } catch {
            return nil
        }
    }
}
