
/// What the hub counts, served by `GET /metrics` in the Prometheus text format (0.0.4).
///
/// Counters only grow; gauges are read when scraped. One lock guards them all: it is held
/// for a few additions per request.
public final class HubMetrics: HTTPServerObserver {
    /// The upper bounds of the latency histograms, in seconds.
    public static let latencyBucketsSeconds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

    struct Histogram {
        var counts = [UInt64](repeating: 0, count: HubMetrics.latencyBucketsSeconds.count)
        var count: UInt64 = 0
        var sum = 0.0

        mutating func observe(_ seconds: Double) {
            if let bucket = HubMetrics.latencyBucketsSeconds.firstIndex(where: { seconds <= $0 }) { counts[bucket] += 1 }
            count += 1
            sum += seconds
        }
    }

    struct Counters {
        var syncs: [String: UInt64] = [:]
        var syncReceivedBytes: UInt64 = 0
        var syncSentBytes: UInt64 = 0
        var httpReceivedBytes: UInt64 = 0
        var httpSentBytes: UInt64 = 0
        var responses: [Int: UInt64] = [:]
        var rejected: [String: UInt64] = [:]
        var refusedConnections: UInt64 = 0
        var openConnections = 0
        var syncLatency = Histogram()
        var commitLatency = Histogram()
        var commits: UInt64 = 0
        var commitBytes: UInt64 = 0
        var compensations: UInt64 = 0
        var retirements: UInt64 = 0
        var maintenanceFailures: UInt64 = 0
    }

    let counters = ParkingLock(Counters())

    /// Metrics with every counter at zero.
    public init() {}

    func recordSync(kind: HubService.RequestKind, receivedBytes: Int, sentBytes: Int, seconds: Double) {
        counters.withLock {
            $0.syncs[kind.rawValue, default: 0] += 1
            $0.syncReceivedBytes += UInt64(receivedBytes)
            $0.syncSentBytes += UInt64(sentBytes)
            $0.syncLatency.observe(seconds)
        }
    }

    func recordCommit(bytes: Int, seconds: Double) {
        counters.withLock {
            $0.commits += 1
            $0.commitBytes += UInt64(bytes)
            $0.commitLatency.observe(seconds)
        }
    }

    func recordCompensations(_ count: Int) {
        guard count > 0 else { return }
        counters.withLock { $0.compensations += UInt64(count) }
    }

    func recordRetirements(_ count: Int) {
        guard count > 0 else { return }
        counters.withLock { $0.retirements += UInt64(count) }
    }

    func recordMaintenanceFailure() {
        counters.withLock { $0.maintenanceFailures += 1 }
    }

    // MARK: HTTPServerObserver

    public func requestFinished(_ record: HTTPRequestRecord) {
        counters.withLock {
            $0.httpReceivedBytes += UInt64(record.bytesReceived)
            $0.httpSentBytes += UInt64(record.bytesSent)
            if record.status > 0 { $0.responses[record.status, default: 0] += 1 }
            if let reason = record.rejection { $0.rejected[reason, default: 0] += 1 }
        }
    }

    public func openConnectionsChanged(to count: Int) {
        counters.withLock { $0.openConnections = count }
    }

    public func connectionRefused(remote: String) {
        counters.withLock {
            $0.refusedConnections += 1
            $0.rejected["too_many_connections", default: 0] += 1
        }
    }

    // MARK: Exposition

    /// The metrics in the Prometheus text format, in a fixed order (labels sorted).
    func prometheusText(loadedAccounts: Int) -> String {
        let c = counters.withLock { $0 }
        var lines: [String] = []
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: String)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for sample in samples { lines.append("\(name)\(sample.labels) \(sample.value)") }
        }
        func histogram(_ name: String, _ help: String, _ histogram: Histogram) {
            var samples: [(labels: String, value: String)] = []
            var cumulative: UInt64 = 0
            for (bound, count) in zip(Self.latencyBucketsSeconds, histogram.counts) {
                cumulative += count
                samples.append(("_bucket{le=\"\(bound)\"}", "\(cumulative)"))
            }
            samples.append(("_bucket{le=\"+Inf\"}", "\(histogram.count)"))
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) histogram")
            for sample in samples { lines.append("\(name)\(sample.labels) \(sample.value)") }
            lines.append("\(name)_sum \(histogram.sum)")
            lines.append("\(name)_count \(histogram.count)")
        }
        metric("converge_hub_syncs_total", "counter", "Sync exchanges answered, by kind of request.",
               ["poll", "push"].map { ("{kind=\"\($0)\"}", "\(c.syncs[$0] ?? 0)") })
        metric("converge_hub_sync_received_bytes_total", "counter", "Bytes of sync messages received.", [("", "\(c.syncReceivedBytes)")])
        metric("converge_hub_sync_sent_bytes_total", "counter", "Bytes of sync answers sent.", [("", "\(c.syncSentBytes)")])
        metric("converge_hub_http_received_bytes_total", "counter", "Bytes of HTTP requests received.", [("", "\(c.httpReceivedBytes)")])
        metric("converge_hub_http_sent_bytes_total", "counter", "Bytes of HTTP responses sent.", [("", "\(c.httpSentBytes)")])
        histogram("converge_hub_sync_duration_seconds", "Time to answer a sync exchange, commit included.", c.syncLatency)
        histogram("converge_hub_commit_duration_seconds", "Time to commit an account's state durably.", c.commitLatency)
        metric("converge_hub_commits_total", "counter", "Account states committed.", [("", "\(c.commits)")])
        metric("converge_hub_commit_bytes_total", "counter", "Bytes of account states committed.", [("", "\(c.commitBytes)")])
        metric("converge_hub_responses_total", "counter", "HTTP responses, by status code.",
               c.responses.keys.sorted().map { ("{code=\"\($0)\"}", "\(c.responses[$0]!)") })
        metric("converge_hub_rejected_requests_total", "counter", "Requests refused, by reason.",
               c.rejected.keys.sorted().map { ("{reason=\"\($0)\"}", "\(c.rejected[$0]!)") })
        metric("converge_hub_refused_connections_total", "counter", "Connections refused because too many were open.",
               [("", "\(c.refusedConnections)")])
        metric("converge_hub_open_connections", "gauge", "Connections open now.", [("", "\(c.openConnections)")])
        metric("converge_hub_accounts", "gauge", "Accounts loaded in memory.", [("", "\(loadedAccounts)")])
        metric("converge_hub_compensating_writes_total", "counter", "Writes the hub superseded to keep the quota.", [("", "\(c.compensations)")])
        metric("converge_hub_retired_devices_total", "counter", "Devices retired by the hub's schedule.", [("", "\(c.retirements)")])
        metric("converge_hub_maintenance_failures_total", "counter", "Scheduled flushes or retirements that failed.",
               [("", "\(c.maintenanceFailures)")])
        return lines.joined(separator: "\n") + "\n"
    }
}
