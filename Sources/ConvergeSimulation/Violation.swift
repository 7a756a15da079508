/// A checker's finding: which checker fired (its kind) and what it saw.
///
/// In JSON, `{"kind": "lostWrite", "message": "…"}`; as text, the kind's label and the
/// message: `lost write: 2 durable writes are neither visible, …`.
public struct Violation: Codable, Hashable, Sendable, CustomStringConvertible {
    /// The checker that fires.
    public enum Kind: String, Codable, CaseIterable, Hashable, Sendable {
        /// Replicas differ after the liveness phase, in state or in visible values.
        case convergence
        /// Replicas did not converge within the bound after healing.
        case liveness
        /// The hub's state exceeds the quota, a replica does after convergence, or replicas
        /// flag the soft quota differently.
        case quota
        /// A replica lacks a write the reference model says is current (neither superseded by
        /// a write that saw it nor by a checked compensation), converged or not.
        case lostWrite
        /// A replica holds a write the reference model says is superseded or unknown, or
        /// reads a key otherwise than the policy's rule on the model's current writes says
        /// (a local write not visible at once included).
        case referenceModel
        /// A compensating write of the hub was not needed (the quota would have held), or did
        /// not restore the key's previous siblings.
        case compensation
        /// A value of one account reached another account's replica.
        case accounts
        /// The join is not commutative or not idempotent on sampled states.
        case crdtLaws
        /// Two runs of the same input gave different digests.
        case determinism
        /// A store could not use its storage (reopen, switch account, apply).
        case storage
        /// A sync message could not be encoded or decoded, or reached the wrong node, or a
        /// device's changes could not be written to the shared folder.
        case sync
        /// A message damaged on the way (a bit flipped by the network) was taken as valid:
        /// what the receiver decoded differs from what was sent.
        case integrity
        /// A replica or the hub broke one of its invariants (checked after every step in
        /// debug builds).
        case invariants
        /// A replay's digest differs from the one its trace recorded.
        case replay

        /// How reports name the kind.
        public var label: String {
            switch self {
            case .lostWrite: return "lost write"
            case .crdtLaws: return "CRDT laws"
            case .referenceModel: return "reference model"
            default: return rawValue
            }
        }
    }

    /// The checker that fired.
    public var kind: Kind
    /// What it saw, in words.
    public var message: String

    /// A violation of `kind`, saying `message`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The kind's label and the message.
    public var description: String { "\(kind.label): \(message)" }
}
