import Converge

/// New incarnations: a device whose store finds its counters reused (its disk restored from
/// an older copy) continues under a new writer ID and re-stamps the writes no peer
/// acknowledged. The simulator sees it as the app would (the store's writer ID changes) and
/// tells the reference model which write each new dot copies.
extension Simulation {
    /// The states device `d`'s store keeps aside of the accounts it is not on (see
    /// ``ReplicatedKeyValueStore/switchAccount(to:)``): a new incarnation re-stamps in them too.
    func keptAsideStates(_ d: Int) -> [AccountID: ReplicatedMap] {
        let store = devices[d].store
        var states: [AccountID: ReplicatedMap] = [:]
        for account in [AccountID.default, Self.secondAccount] where account != store.account {
            states[account] = store.keptAsideState(of: account)
        }
        return states
    }

    /// Device `d`'s store started a new incarnation since it was `stateBefore`, written by
    /// `writerBefore`, keeping aside `keptAsideBefore` of its other accounts: each sibling
    /// the new writer ID holds copies one the old writer ID held at the same key (same
    /// timestamp and value), in the current account and in each kept aside. Each copy is a
    /// new local write in the ledger (not durable until the next flush, like any write) and
    /// in the model.
    func observeIncarnation(_ d: Int, writerBefore: ReplicaID, stateBefore: ReplicatedMap,
                            keptAsideBefore: [AccountID: ReplicatedMap] = [:]) {
        let store = devices[d].store
        metrics.deviceIncarnations += 1
        changed(.device(d))
        var count = observeRestamps(d, account: store.account, writerBefore: writerBefore, stateBefore: stateBefore,
                                    state: store.replicatedState)
        for (account, before) in keptAsideBefore.sorted(by: { $0.key < $1.key }) {
            guard let after = store.keptAsideState(of: account) else { continue }
            count += observeRestamps(d, account: account, writerBefore: writerBefore, stateBefore: before, state: after)
        }
        recordMoment("\(devices[d].id) finds its counters reused (it knew \(writerBefore):\(stateBefore.context[writerBefore]), a peer more) and continues as \(store.writerID), re-stamping \(count) unacknowledged write\(count == 1 ? "" : "s")")
    }

    /// Tells the ledger and the model of the writes device `d`'s new incarnation re-stamped
    /// in `account`, whose state went from `stateBefore` to `state`.
    ///
    /// - Returns: The number of writes re-stamped.
    private func observeRestamps(_ d: Int, account: AccountID, writerBefore: ReplicaID, stateBefore: ReplicatedMap,
                                 state: ReplicatedMap) -> Int {
        let writer = devices[d].store.writerID
        var restamped: [ReferenceModel.Restamp] = []
        for key in state.entries.keys.sortedByUTF8() {
            // A sibling it held already is not a copy: a twin (a device cloned from the same
            // disk) may have written under this writer ID first.
            let held = stateBefore.siblings(forKey: key)
            for sibling in state.siblings(forKey: key) where sibling.dot.replica == writer && !held.contains(sibling) {
                guard let original = held.first(where: {
                    $0.dot.replica == writerBefore && $0.timestamp == sibling.timestamp && $0.value == sibling.value
                }) else {
                    report(Violation(.referenceModel, "at \(now) ms \(devices[d].id) holds \(sibling.dot) of \(key) after its new incarnation, copying no write it held"))
                    continue
                }
                restamped.append(ReferenceModel.Restamp(key: key, old: Self.modelID(original.dot), new: Self.modelID(sibling.dot),
                                                        stamp: Self.modelStamp(sibling.timestamp), value: sibling.value, ledgerIndex: -1))
            }
        }
        restamped.sort { $0.new < $1.new }
        for index in restamped.indices {
            let restamp = restamped[index]
            restamped[index].ledgerIndex = ledger.record(account: account, device: d, key: restamp.key,
                                                         dot: Dot(replica: writer, counter: restamp.new.counter),
                                                         hasValue: restamp.value != nil, timeMs: now)
            devices[d].unflushedWrites.append(restamped[index].ledgerIndex)
        }
        let outcome = model.reincarnated(device: d, account: account, oldWriter: writerBefore.rawValue,
                                         oldWriterCount: state.context[writerBefore], restamped: restamped)
        for problem in outcome.problems { report(Violation(.referenceModel, "at \(now) ms \(problem)")) }
        devices[d].replacedOnFlush += outcome.replaced
        return restamped.count
    }

    /// Tells the ledger and the model of the writes device `d`'s store adopted from a
    /// message it took (see ``SyncAction/adopt(_:)``): each is a new local write (not
    /// durable until the next flush, like any write) copying the write the message carried.
    func observeAdoption(_ d: Int, _ adopted: [AdoptedWrite]) {
        let store = devices[d].store
        let state = store.replicatedState
        var restamped: [ReferenceModel.Restamp] = []
        for write in adopted {
            guard let sibling = state.siblings(forKey: write.key).first(where: { $0.dot == write.new }) else {
                report(Violation(.referenceModel, "at \(now) ms \(devices[d].id) adopted \(write.old) of \(write.key) as \(write.new) and does not hold it"))
                continue
            }
            let ledgerIndex = ledger.record(account: store.account, device: d, key: write.key, dot: write.new,
                                            hasValue: sibling.value != nil, timeMs: now)
            devices[d].unflushedWrites.append(ledgerIndex)
            restamped.append(ReferenceModel.Restamp(key: write.key, old: Self.modelID(write.old), new: Self.modelID(write.new),
                                                    stamp: Self.modelStamp(sibling.timestamp), value: sibling.value, ledgerIndex: ledgerIndex))
        }
        for problem in model.adopted(device: d, account: store.account, restamped: restamped) {
            report(Violation(.referenceModel, "at \(now) ms \(problem)"))
        }
        metrics.adoptedWrites += restamped.count
        recordMoment("\(devices[d].id) adopts \(restamped.count) write\(restamped.count == 1 ? "" : "s") of an earlier writer ID that no copy of its store holds, as \(store.writerID): \(adopted.map { "\($0.old) of \($0.key) as \($0.new)" }.joined(separator: ", "))")
    }
}
