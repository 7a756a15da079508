import Converge

extension HubService {
    /// The kind of sync request, for logs and metrics.
    enum RequestKind: String {
        case push
        case poll
    }

    /// Answers `POST /sync`: decodes the message, checks it is for the token's account,
    /// exchanges it with the account's machine, and answers once the change is committed.
    func sync(_ request: HTTPRequest) -> HTTPResponse {
        let account: AccountID
        switch authenticate(request.head) {
        case .account(let found): account = found
        case .refused(let refusal): return refusal
        }
        let message: SyncMessage
        do {
            message = try SyncMessage(encoded: request.body)
        } catch {
            return .text(.badRequest, "not a sync message: \(error)", rejection: "bad_message")
        }
        let kind: RequestKind, messageAccount: AccountID, device: ReplicaID
        switch message {
        case .push(let push): (kind, messageAccount, device) = (.push, push.account, push.device)
        case .poll(let poll): (kind, messageAccount, device) = (.poll, poll.account, poll.device)
        case .reply, .gossip, .upToDate:
            return .text(.badRequest, "the hub accepts only pushes and polls", rejection: "bad_message")
        }
        guard messageAccount == account else {
            return .text(.forbidden, "this token belongs to account \(account), not to \(messageAccount)", rejection: "wrong_account")
        }
        let started = MonotonicClock.nowNanoseconds()
        let fields: [(key: String, value: String)] = [("account", account.rawValue), ("device", device.rawValue), ("kind", kind.rawValue)]
        do {
            let answer = try exchange(message, account: account)
            metrics.recordSync(kind: kind, receivedBytes: request.body.count, sentBytes: answer.bytes.count,
                               seconds: Double(MonotonicClock.nowNanoseconds() - started) / 1e9)
            return HTTPResponse(status: .ok, headers: [("Content-Type", "application/octet-stream")], body: answer.bytes,
                                logFields: fields + [("answer", answer.upToDate ? "up-to-date" : "reply")])
        } catch .refused(let input) {
            var response = HTTPResponse.text(.badRequest, "the push was refused: \(input)", rejection: "refused")
            response.logFields = fields + [("error", "\(input)")]
            return response
        } catch {
            var response = HTTPResponse.text(.serviceUnavailable, "the hub could not commit the exchange: \(error)",
                                             headers: [("Retry-After", "1")], rejection: "storage")
            response.logFields = fields + [("error", "\(error)")]
            return response
        }
    }

    /// Exchanges one push or poll with `account`'s machine under the account's lock, and
    /// commits the account's new state before returning the answer.
    ///
    /// A poll answered "up to date" changes nothing its device was told: only when the
    /// device was last seen and what it last acknowledged, which the periodic flush writes.
    /// Everything else is written in one transaction before the answer leaves. If another
    /// hub process wrote the account meanwhile, the exchange is redone on its state.
    ///
    /// - Throws: ``HubError`` if the store fails; the machine in memory is then unchanged.
    func exchange(_ message: SyncMessage, account: AccountID) throws(HubError) -> (bytes: [UInt8], upToDate: Bool) {
        let slot = self.slot(for: account)
        return try slot.state.withLock { state throws(HubError) in
            for _ in 0..<4 {
                var machine = try loadedMachine(&state, account: account)
                var compensations: [HubCompensation] = []
                let now = clock.nowMilliseconds()
                let answer: SyncMessage
                do throws(ConvergeError) {
                    answer = try machine.receive(message, nowMilliseconds: now, compensations: &compensations)
                } catch {
                    guard case .malformed(let input) = error else { throw HubError(error, account: account) }
                    throw .refused(input)
                }
                let bytes: [UInt8]
                do {
                    bytes = try answer.encoded()
                } catch {
                    throw .storage(StorageFailure(kind: .other, path: "-", operation: .write, detail: "the answer cannot be encoded: \(error)"))
                }
                if case .upToDate = answer {
                    state.machine = machine
                    state.dirty = true
                    return (bytes, true)
                }
                if try commit(machine, of: account, into: &state) {
                    metrics.recordCompensations(compensations.count)
                    return (bytes, false)
                }
            }
            throw .contention(account)
        }
    }

    /// The slot of `account`, created empty on first use.
    func slot(for account: AccountID) -> AccountSlot {
        slots.withLock { slots in
            if let slot = slots[account] { return slot }
            let slot = AccountSlot()
            slots[account] = slot
            return slot
        }
    }

    /// The account's machine, loaded from the store if it is not in memory.
    func loadedMachine(_ state: inout AccountSlot.State, account: AccountID) throws(HubError) -> HubSyncMachine {
        if let machine = state.machine { return machine }
        var machine = HubSyncMachine(hubID: configuration.hubID, quota: configuration.quota,
                                     retirementIntervalMilliseconds: configuration.retirementIntervalMilliseconds)
        if let stored = try store.loadAccount(account) {
            do {
                try machine.restoreState(stored.state, of: account)
            } catch {
                guard case .malformed(let input) = error else { throw HubError(error, account: account) }
                throw .unreadableAccount(account, input)
            }
            state.revision = stored.revision
        } else {
            state.revision = 0
        }
        state.machine = machine
        state.dirty = false
        return machine
    }

    /// Writes `machine`'s state of `account` over the revision `state` knows, and adopts it.
    ///
    /// - Returns: `false` if another process wrote the account first: `state` is then
    ///   emptied, so the next use loads the newer copy.
    func commit(_ machine: HubSyncMachine, of account: AccountID, into state: inout AccountSlot.State) throws(HubError) -> Bool {
        guard let bytes = machine.encodedState(of: account) else { return true }
        let started = MonotonicClock.nowNanoseconds()
        guard let revision = try store.storeAccount(account, state: bytes, replacing: state.revision) else {
            state = AccountSlot.State()
            return false
        }
        metrics.recordCommit(bytes: bytes.count, seconds: Double(MonotonicClock.nowNanoseconds() - started) / 1e9)
        state.machine = machine
        state.revision = revision
        state.dirty = false
        return true
    }
}
