/// How devices exchange changes.
public enum SyncTopology: String, Hashable, Sendable, CaseIterable {
    /// Every device syncs with one authoritative hub (like iCloud); the default.
    case hub
    /// Devices gossip with each other; there is no authority and the quota is soft.
    case mesh
}
