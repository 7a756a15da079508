/// How devices exchange changes.
public enum SyncTopology: String, Hashable, Sendable, CaseIterable {
    /// Every device syncs with one authoritative hub (like iCloud); the default.
    case hub
    /// Devices gossip with each other; there is no authority and the quota is soft.
    case mesh
    /// Devices exchange files through a shared folder that a file-sync service carries
    /// between them (`ConvergeSharedFolder`): a mesh whose messages are files, which reach
    /// other devices late, out of order or not at all; the quota is soft, as in the mesh.
    case folder
}
