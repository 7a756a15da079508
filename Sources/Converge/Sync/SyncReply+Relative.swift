/// Replies written relative to what the device holds (``SyncReply/relativeTo``): a reply to
/// a device that polled or pushed with the digest of exactly what the hub last sent it carries, of
/// the hub's context and stable frontier, only what changed since, so its size follows the
/// changes and not the number of replicas that ever wrote (at 1,540 replicas, a reply
/// carrying one key is 79 bytes instead of 37,883: `converge-bench --only hub.reply.bytes`).
extension SyncReply {
    /// This reply, written relative to the hub context `context` and stable frontier
    /// `stableFrontier` that a device is known to hold (its request's digest named them), or
    /// `nil` when it cannot be: it is not a whole delta (a page or a full state carries a
    /// context of its own), it is relative already, it names keys the hub superseded to keep
    /// the quota (``rejectedKeys``, said only in the answer to the push that broke it: a
    /// device that ignores a stale relative reply would never learn of them), or the hub's
    /// context or frontier is not at or above the device's in every replica (the device
    /// would join them into more than the hub holds).
    ///
    /// The context keeps the entries that differ from `context` and those of the replicas
    /// whose writes the delta carries (a sibling names its replica by its place in the
    /// context); the frontier keeps the entries that differ from `stableFrontier`.
    ///
    /// - Complexity: O(*r* + *s*) in the replicas of the contexts and the siblings of the delta.
    package func relative(toContext context: VersionVector, stableFrontier frontier: VersionVector) -> SyncReply? {
        relative(toContext: context, stableFrontier: frontier, digest: SyncPoll.digest(context: context, stableFrontier: frontier))
    }

    /// ``relative(toContext:stableFrontier:)``, for a hub that has the digest of `context` and
    /// `frontier` already (the poll carried it, and the hub compared it with its record).
    package func relative(toContext context: VersionVector, stableFrontier frontier: VersionVector, digest: UInt64) -> SyncReply? {
        guard kind == .delta, !moreToCome, relativeTo == nil, rejectedKeys.isEmpty, context.isDominated(by: delta.context),
              frontier.isDominated(by: stableFrontier) else { return nil }
        var named = Set<ReplicaID>()
        for siblings in delta.entries.values {
            for sibling in siblings { named.insert(sibling.dot.replica) }
        }
        // Both walks go in replica order, so each builds its vector in order.
        var changedContext: [(replica: ReplicaID, counter: UInt64)] = []
        VersionVector.walk(context, delta.context) { replica, known, counter in
            if counter > 0 && (counter != known || named.contains(replica)) { changedContext.append((replica, counter)) }
        }
        var changedFrontier: [(replica: ReplicaID, counter: UInt64)] = []
        VersionVector.walk(frontier, stableFrontier) { replica, known, counter in
            if counter > 0 && counter != known { changedFrontier.append((replica, counter)) }
        }
        var reply = self
        reply.delta.context = VersionVector(sorted: changedContext)
        reply.stableFrontier = VersionVector(sorted: changedFrontier)
        reply.relativeTo = digest
        return reply
    }

    /// This reply with its context and stable frontier whole, for a device that holds the
    /// hub context `context` and stable frontier `stableFrontier`.
    ///
    /// A device that took another reply since it polled no longer holds what the reply is
    /// relative to, and must ignore it: joined with what it holds by then, the reply would
    /// claim, for its keys, writes it does not carry. The next exchange starts from what the
    /// device holds.
    ///
    /// - Parameters:
    ///   - context: The hub context the device holds (``DeviceSyncMachine/hubContext``).
    ///   - frontier: The stable frontier the device holds (``DeviceSyncMachine/stableFrontier``).
    /// - Returns: The reply itself if it is not relative; joined with `context` and
    ///   `frontier` if it is relative to exactly them; `nil` otherwise.
    /// - Complexity: O(*r*) in the replicas of the contexts.
    public func resolved(againstContext context: VersionVector, stableFrontier frontier: VersionVector) -> SyncReply? {
        guard let base = relativeTo else { return self }
        guard base == SyncPoll.digest(context: context, stableFrontier: frontier) else { return nil }
        var reply = self
        reply.delta.context = context.union(delta.context)
        reply.stableFrontier = frontier.union(stableFrontier)
        reply.relativeTo = nil
        return reply
    }
}
