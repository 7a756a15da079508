import Converge
import ConvergeHub
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// converge-hub-load: N simulated devices syncing with a hub over loopback, each on its own
// thread and kept-alive connection, in a closed loop (the next request leaves when the
// answer arrived). Prints one JSON line: syncs per second and latency quantiles.
//
//   converge-hub-load --port P[,P2,…] (--data DIR | --database URL) --devices N --seconds S
//                     --mode poll|push [--devices-per-account K] [--fill-bytes B] [--fixed-responder]
//                     [--label TEXT]
//
// With several ports (hubs sharing one PostgreSQL database), device i talks to port
// i mod n, so each account's devices are spread over the hubs; with --account-affinity,
// every device of account a talks to port a mod n (as a load balancer hashing the token would).
//
// --fill-bytes makes the first device of each account write B bytes of values (in keys of
// 1,000 bytes) before the run, to measure what the size of an account costs.
//
// --data is the hub's folder, --database its PostgreSQL database: the tool makes one token
// per account there. With
// --fixed-responder the same requests go to a server that answers a fixed body (nginx in
// Benchmarks/hub-load.sh), as the ceiling of what HTTP on this machine can do: the devices
// do the same client work but do not apply the (fixed) answers.

struct Options {
    var ports: [UInt16] = []
    var data = ""
    var database = ""
    var label = ""
    var accountAffinity = false
    var devices = 16
    var devicesPerAccount = 4
    var seconds = 5.0
    var mode = "poll"
    var fixedResponder = false
    var fillBytes = 0
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("converge-hub-load: \(message)\n".utf8))
    exit(2)
}

var options = Options()
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let flag = arguments.removeFirst()
    if flag == "--fixed-responder" { options.fixedResponder = true; continue }
    if flag == "--account-affinity" { options.accountAffinity = true; continue }
    guard !arguments.isEmpty else { fail("\(flag) needs a value") }
    let value = arguments.removeFirst()
    switch flag {
    case "--port":
        options.ports = value.split(separator: ",").map { part -> UInt16 in
            guard let port = UInt16(part) else { fail("bad port \(part)") }
            return port
        }
    case "--data": options.data = value
    case "--database": options.database = value
    case "--label": options.label = value
    case "--devices": options.devices = Int(value) ?? { fail("bad device count") }()
    case "--devices-per-account": options.devicesPerAccount = Int(value) ?? { fail("bad count") }()
    case "--fill-bytes": options.fillBytes = Int(value) ?? { fail("bad byte count") }()
    case "--seconds": options.seconds = Double(value) ?? { fail("bad duration") }()
    case "--mode":
        guard value == "poll" || value == "push" else { fail("--mode is poll or push") }
        options.mode = value
    default: fail("unknown option \(flag)")
    }
}
guard !options.ports.isEmpty, options.devices > 0, options.devicesPerAccount > 0 else { fail("--port and --devices are required") }
guard options.data.isEmpty != options.database.isEmpty else { fail("give either --data DIR or --database URL") }

/// A kept-alive HTTP/1.1 connection that POSTs bodies and reads `Content-Length` answers.
final class Connection {
    let descriptor: Int32
    var buffer: [UInt8] = []

    init(port: UInt16) {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { fail("cannot connect to 127.0.0.1:\(port)") }
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// POSTs `body` to /sync and returns the status and the answer's body.
    func post(_ body: [UInt8], token: String) -> (status: Int, body: [UInt8]) {
        let head = "POST /sync HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/octet-stream\r\nContent-Length: \(body.count)\r\n\r\n"
        let request = Array(head.utf8) + body
        var offset = 0
        while offset < request.count {
            let sent = request.withUnsafeBytes { send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { fail("the server closed the connection") }
            offset += sent
        }
        var headEnd: Int?
        var scanned = 0
        while true {
            if buffer.count >= 4 {
                var index = max(0, scanned - 3)
                while index + 3 < buffer.count {
                    if buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
                        headEnd = index
                        break
                    }
                    index += 1
                }
                scanned = buffer.count
            }
            if headEnd != nil { break }
            fill()
        }
        let answerHead = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        let status = Int(answerHead.split(separator: " ").dropFirst().first ?? "") ?? 0
        var length = 0
        for line in answerHead.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            length = Int(line.split(separator: ":")[1].trimmingCharacters(in: CharacterSet.whitespaces)) ?? 0
        }
        buffer.removeFirst(headEnd! + 4)
        while buffer.count < length { fill() }
        let answer = Array(buffer[..<length])
        buffer.removeFirst(length)
        return (status, answer)
    }

    private func fill() {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = recv(descriptor, &chunk, chunk.count, 0)
        guard count > 0 else { fail("the server closed the connection") }
        buffer += chunk[..<count]
    }
}

/// The store's transport, never called: the tool moves the bytes itself.
struct Unused: SyncTransport {
    func exchange(_ request: [UInt8]) async throws -> [UInt8] { throw ConvergeError.unreachable("unused") }
}

// One token per account, made in the hub's storage (the hub reads new tokens as they come).
let accountCount = (options.devices + options.devicesPerAccount - 1) / options.devicesPerAccount
var tokens: [String] = []
do {
    let store: any HubStateStore = options.database.isEmpty
        ? try SQLiteHubStateStore(folder: options.data)
        : try PostgreSQLHubStateStore(connectionString: options.database, maximumConnections: 1)
    for index in 0..<accountCount {
        tokens.append(try HubService.createToken(for: AccountID("load-\(index)")!, in: store, nowMilliseconds: 0))
    }
} catch {
    fail("cannot make tokens in \(options.database.isEmpty ? options.data : "the database"): \(error)")
}

/// Runs the devices; returns every latency (nanoseconds), the failures and the elapsed seconds.
func runLoad(options: Options, tokens: [String]) -> (latencies: [UInt64], failures: Int, seconds: Double) {
    let latencies = Mutex<[UInt64]>([])
    let failures = Mutex(0)
    let ready = DispatchGroup()
    let finished = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    let startTime = Mutex<UInt64>(0)
    for device in 0..<options.devices {
        ready.enter()
        finished.enter()
        let thread = Thread {
            let account = device / options.devicesPerAccount
            let token = tokens[account]
            // The devices exchange through this tool's own connection (hubRequest / receive),
            // so the store's transport is never called.
            let store = ReplicatedKeyValueStore(replicaID: ReplicaID("device-\(device)")!, transport: Unused(),
                                                account: AccountID("load-\(account)")!)
            let connection = Connection(port: options.ports[(options.accountAffinity ? account : device) % options.ports.count])
            // Catch up first, so a poll has nothing to fetch and a push carries one key.
            func exchange() -> Bool {
                guard let request = try? store.hubRequest().bytes else { return false }
                let answer = connection.post(request, token: token)
                guard answer.status == 200 else { return false }
                if !options.fixedResponder { _ = try? store.receive(answer.body) }
                return true
            }
            // A device with nothing in its account can only push (it polls for a context it
        // holds): write one key, then catch up with the account's other devices.
        store.set(Int64(0), forKey: "key-\(device)")
        if device % options.devicesPerAccount == 0 {
            for index in 0..<(options.fillBytes / 1_000) {
                store.set(String(repeating: "v", count: 990), forKey: "fill-\(index)")
            }
        }
        for _ in 0..<3 { _ = exchange() }
            ready.leave()
            start.wait()
            let deadline = startTime.withLock { $0 } + UInt64(options.seconds * 1e9)
            var mine: [UInt64] = []
            var counter: Int64 = 0
            var failed = 0
            while true {
                let now = DispatchTime.now().uptimeNanoseconds
                if now >= deadline { break }
                if options.mode == "push" {
                    counter += 1
                    store.set(counter, forKey: "key-\(device)")
                }
                if exchange() {
                    mine.append(DispatchTime.now().uptimeNanoseconds - now)
                } else {
                    failed += 1
                }
            }
            latencies.withLock { $0 += mine }
            failures.withLock { $0 += failed }
            finished.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    ready.wait()
    startTime.withLock { $0 = DispatchTime.now().uptimeNanoseconds }
    for _ in 0..<options.devices { start.signal() }
    finished.wait()
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - startTime.withLock { $0 }) / 1e9
    return (latencies.withLock { $0 }, failures.withLock { $0 }, elapsed)
}

let (allLatencies, failureCount, elapsed) = runLoad(options: options, tokens: tokens)
let sorted = allLatencies.sorted()
func quantile(_ q: Double) -> Double {
    sorted.isEmpty ? 0 : Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]) / 1e6
}
let target = options.fixedResponder ? "fixed-responder" : "converge-hub"
print(String(format: "{\"label\":\"%@\",\"hubs\":%d,\"target\":\"%@\",\"mode\":\"%@\",\"devices\":%d,\"accounts\":%d,\"seconds\":%.2f,\"syncs\":%d,\"failures\":%d,\"syncs_per_second\":%.0f,\"p50_ms\":%.3f,\"p99_ms\":%.3f}",
             options.label, options.ports.count, target, options.mode, options.devices, accountCount, elapsed, sorted.count, failureCount,
             Double(sorted.count) / elapsed, quantile(0.5), quantile(0.99)))
