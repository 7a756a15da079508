import Converge

/// The hub service: authenticates devices by bearer token, drives one `HubSyncMachine`
/// per account, and answers only after the account's new state is committed to its
/// ``HubStateStore``.
///
/// Endpoints: `POST /sync` (one binary sync message in, the hub's binary answer out),
/// `GET /account` (the name of the bearer token's account, as text), `GET /health`, `GET /metrics` (Prometheus text format). Exchanges of one account are
/// serialized by that account's lock; accounts run in parallel (their commits share the
/// store's single writer).
public final class HubService: HTTPRequestHandler {
    /// The hub's quota, retirement and maintenance settings.
    public let configuration: HubConfiguration
    let store: any HubStateStore
    let clock: any PhysicalClock
    /// What the hub counts, for `GET /metrics`.
    public let metrics: HubMetrics
    /// The accounts loaded so far (each loaded on its first exchange).
    let slots = ParkingLock<[AccountID: AccountSlot]>([:])
    /// Token hashes already looked up, and their accounts.
    let tokens = ParkingLock<[[UInt8]: AccountID]>([:])
    let maintenance = ParkingLock(MaintenanceState())

    /// The most token hashes cached; the cache starts over when full.
    static let maximumCachedTokens = 100_000

    /// Creates the service over `store`.
    public init(store: any HubStateStore, configuration: HubConfiguration = HubConfiguration(),
                clock: any PhysicalClock = SystemClock(), metrics: HubMetrics = HubMetrics()) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.metrics = metrics
    }

    // MARK: Routing

    public func admit(_ head: HTTPRequestHead) -> HTTPResponse? {
        switch (head.method, head.path) {
        case ("GET", "/health"), ("GET", "/metrics"):
            return nil
        case ("GET", "/account"):
            if case .refused(let refusal) = authenticate(head) { return refusal }
            return nil
        case ("POST", "/sync"):
            if case .refused(let refusal) = authenticate(head) { return refusal }
            guard head.headers["content-length"] != nil else {
                return .text(.lengthRequired, "send the sync message with a Content-Length", rejection: "length_required")
            }
            if let type = head.headers["content-type"], !type.lowercased().hasPrefix("application/octet-stream") {
                return .text(.unsupportedMediaType, "a sync message is application/octet-stream, not \(type)", rejection: "media_type")
            }
            return nil
        case (_, "/health"), (_, "/metrics"), (_, "/account"):
            return .text(.methodNotAllowed, "\(head.path) answers GET", headers: [("Allow", "GET")], rejection: "method")
        case (_, "/sync"):
            return .text(.methodNotAllowed, "/sync answers POST", headers: [("Allow", "POST")], rejection: "method")
        default:
            return .text(.notFound, "no such endpoint: the hub serves POST /sync, GET /account, GET /health and GET /metrics", rejection: "not_found")
        }
    }

    public func respond(to request: HTTPRequest) -> HTTPResponse {
        switch request.head.path {
        case "/health": return .text(.ok, "ok")
        case "/account":
            // The account of the token (a client that was given only a token asks).
            switch authenticate(request.head) {
            case .account(let account): return .text(.ok, account.rawValue)
            case .refused(let refusal): return refusal
            }
        case "/metrics":
            return HTTPResponse(status: .ok, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                                body: Array(metricsText().utf8))
        default: return sync(request)
        }
    }

    /// The metrics, with the gauges read now.
    func metricsText() -> String {
        let loaded = slots.withLock { $0.count }
        return metrics.prometheusText(loadedAccounts: loaded)
    }
}

/// One account: its machine, loaded on first use, and what is known of its stored copy.
final class AccountSlot: Sendable {
    let state = ParkingLock(State())

    struct State {
        /// The account's machine; `nil` until loaded from the store.
        var machine: HubSyncMachine?
        /// The version of the stored copy `machine` was loaded from or written as (`nil`:
        /// none stored, or nothing loaded).
        var version: HubStoredVersion?
        /// Changed since the last write (only by polls answered "up to date").
        var dirty = false
        /// When each device whose polls were answered "up to date" since the last write was
        /// last seen: re-applied to a newer copy another process wrote, so that copy does
        /// not take a polling device for a silent one.
        var pendingSeen: [ReplicaID: UInt64] = [:]
    }
}
