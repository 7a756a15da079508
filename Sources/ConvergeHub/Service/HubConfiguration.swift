import Converge

/// How the hub service runs its accounts.
public struct HubConfiguration: Sendable {
    /// The hub's replica ID: the author of its compensating writes.
    public var hubID: ReplicaID
    /// The quota the hub enforces on every account.
    public var quota: Quota
    /// How long a device may stay silent before it is retired (so tombstones can be collected).
    public var retirementIntervalMilliseconds: UInt64
    /// How often the hub retires silent devices and collects tombstones by itself, without
    /// waiting for an exchange.
    public var maintenanceIntervalMilliseconds: UInt64
    /// How often the bookkeeping of polls answered "up to date" (when each device was last
    /// seen) is written. Such polls change nothing a device was told, so they are not
    /// written one by one; a crash loses at most this much of it, which can only make a
    /// device look silent for longer.
    public var flushIntervalMilliseconds: UInt64

    /// A configuration: the defaults are iCloud's quota and a 30-day retirement interval.
    public init(hubID: ReplicaID = "hub", quota: Quota = .iCloud, retirementIntervalMilliseconds: UInt64 = 30 * 24 * 3_600 * 1_000,
                maintenanceIntervalMilliseconds: UInt64 = 60_000, flushIntervalMilliseconds: UInt64 = 1_000) {
        self.hubID = hubID
        self.quota = quota
        self.retirementIntervalMilliseconds = retirementIntervalMilliseconds
        self.maintenanceIntervalMilliseconds = maintenanceIntervalMilliseconds
        self.flushIntervalMilliseconds = flushIntervalMilliseconds
    }
}
