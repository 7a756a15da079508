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
            // Where the storage is stays in the log; the device learns what it needs.
            let said = if case .storage = error { "the hub's storage is unavailable now; retry later" } else { "\(error)" }
            var response = HTTPResponse.text(.serviceUnavailable, "the hub could not commit the exchange: \(said)",
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
    /// Everything else is written in one transaction before the answer leaves. The store
    /// says whether another hub process wrote the account since this one last did; the
    /// exchange then runs on the stored copy, never on a stale one in memory.
    ///
    /// - Throws: ``HubError`` if the store fails; the machine in memory is then unchanged.
    func exchange(_ message: SyncMessage, account: AccountID) throws(HubError) -> (bytes: [UInt8], upToDate: Bool) {
        let slot = self.slot(for: account)
        let device: ReplicaID = switch message {
        case .push(let push): push.device
        case .poll(let poll): poll.device
        default: configuration.hubID
        }
        return try slot.state.withLock { state throws(HubError) in
            var compensationCount = 0
            let now = clock.nowMilliseconds()
            let answer = try update(&state, of: account) { machine, _ throws(HubError) in
                var compensations: [HubCompensation] = []
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
                compensationCount = compensations.count
                if case .upToDate = answer { return (result: (bytes, true), write: false) }
                return (result: (bytes, false), write: true)
            }
            if answer.1 {
                state.dirty = true
                state.pendingSeen[device] = now
            } else {
                metrics.recordCompensations(compensationCount)
            }
            return answer
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

    /// Runs `body` on `account`'s current machine through the store, writes the machine's
    /// state if `body` says so, and adopts the machine and its stored version in `state`.
    ///
    /// `body` gets the machine in memory if the stored copy is still the one it came from,
    /// or one restored from the stored copy with the devices this process saw since its
    /// last write noted as seen (the second argument is then `true`); it returns its result
    /// and whether to write.
    ///
    /// - Throws: What `body` throws or the store's failure; `state` is then unchanged.
    func update<Result>(_ state: inout AccountSlot.State, of account: AccountID,
                        _ body: (inout HubSyncMachine, _ reloaded: Bool) throws(HubError) -> (result: Result, write: Bool))
        throws(HubError) -> Result {
        var adopted: HubSyncMachine?
        var written = 0
        var bodyFinished: UInt64 = 0
        let current = state.machine
        let pendingSeen = state.pendingSeen
        let (result, version) = try store.update(account, known: state.machine == nil ? nil : state.version) { copy throws(HubError) in
            var machine: HubSyncMachine, reloaded: Bool
            switch copy {
            case .unchanged: (machine, reloaded) = (current ?? emptyMachine(), false)
            case .changed(let stored):
                (machine, reloaded) = (try restoredMachine(stored, of: account, over: current), true)
                for (device, seen) in pendingSeen.sorted(by: { $0.key < $1.key }) {
                    machine.noteSeen(device, of: account, atMilliseconds: seen)
                }
            }
            let (result, write) = try body(&machine, reloaded)
            adopted = machine
            let bytes = write ? machine.encodedState(of: account) : nil
            written = bytes?.count ?? 0
            bodyFinished = MonotonicClock.nowNanoseconds()
            return (result, bytes)
        }
        if written > 0 {
            metrics.recordCommit(bytes: written, seconds: Double(MonotonicClock.nowNanoseconds() - bodyFinished) / 1e9)
            state.dirty = false
            state.pendingSeen = [:]
        }
        state.machine = adopted
        state.version = version
        return result
    }

    /// A machine with no account loaded, configured as this hub. Its compensating writes go
    /// under an incarnation of the hub's ID drawn at random, since the state it loads may be
    /// an older copy than one another machine wrote from (see `HubSyncMachine.writer`).
    func emptyMachine() -> HubSyncMachine {
        var machine = HubSyncMachine(hubID: configuration.hubID, quota: configuration.quota,
                                     retirementIntervalMilliseconds: configuration.retirementIntervalMilliseconds)
        machine.writerIncarnation = UInt64.random(in: 2...(1 << 48))
        return machine
    }

    /// A machine holding `stored` as `account`'s state (an empty one if nothing is stored),
    /// restored over `current`, the machine in memory, if there is one: it then goes on
    /// writing its compensations under its incarnation when the stored copy holds all it
    /// wrote (another hub's newer copy), never over an older copy.
    func restoredMachine(_ stored: HubStoredAccount?, of account: AccountID, over current: HubSyncMachine? = nil) throws(HubError) -> HubSyncMachine {
        var machine = stored == nil ? emptyMachine() : current ?? emptyMachine()
        guard let stored else { return machine }
        do {
            try machine.restoreState(stored.state, of: account)
        } catch {
            guard case .malformed(let input) = error else { throw HubError(error, account: account) }
            throw .unreadableAccount(account, input)
        }
        return machine
    }
}
