import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An HTTP/1.1 server on POSIX sockets: one thread accepts, one thread serves each
/// connection (blocking I/O with deadlines, which keeps every request's code straight-line).
///
/// It keeps connections alive, reads `Content-Length` bodies only, and bounds everything
/// (``HTTPServerConfiguration``): the size of heads and bodies, how long a client may take
/// to send them or stay idle (so slow clients cannot hold connections), and how many
/// connections are open (one more is answered `503` at once). A malformed request is
/// answered with its `4xx` and its connection closed; the server goes on serving the others.
///
/// ``shutdown(graceMilliseconds:)`` stops accepting, closes idle connections, and lets the
/// requests in flight finish within a bound.
public final class HTTPServer: Sendable {
    /// The configuration it runs with.
    public let configuration: HTTPServerConfiguration
    /// The address actually bound (the port chosen, if the configuration asked for port 0).
    public let boundAddress: ListenAddress
    let handler: any HTTPRequestHandler
    let observer: (any HTTPServerObserver)?
    let listener: Int32
    /// Written once at shutdown and never read, so every wait that includes it wakes.
    let wake: (read: Int32, write: Int32)
    let state = ParkingLock(State())
    let dates = HTTPDateCache()

    struct State {
        var openConnections = 0
        var isShuttingDown = false
        var acceptThreadRunning = false
        /// Closed when accepting stops, so new clients are refused at once rather than
        /// queued in the backlog until they time out.
        var listenerOpen = true
    }

    /// Binds and listens at once (so the bound port is known), without serving yet.
    ///
    /// - Throws: ``SocketError`` if the address cannot be resolved or bound.
    public init(configuration: HTTPServerConfiguration, handler: any HTTPRequestHandler,
                observer: (any HTTPServerObserver)? = nil) throws(SocketError) {
        // A client that goes away while we write must be an error, not a signal that kills us.
        signal(SIGPIPE, SIG_IGN)
        let (descriptor, bound) = try Socket.openListener(on: configuration.address, backlog: 1_024)
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            close(descriptor)
            throw SocketError("create the shutdown pipe")
        }
        pipeEnds.forEach(Socket.setCloseOnExec)
        self.configuration = configuration
        self.boundAddress = bound
        self.handler = handler
        self.observer = observer
        self.listener = descriptor
        self.wake = (pipeEnds[0], pipeEnds[1])
    }

    deinit {
        if state.withLock({ $0.listenerOpen }) { close(listener) }
        close(wake.read)
        close(wake.write)
    }

    /// Starts accepting connections on a thread of its own.
    public func start() {
        state.withLock { $0.acceptThreadRunning = true }
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "converge-hub accept"
        thread.start()
    }

    /// The number of connections open now.
    public var openConnections: Int { state.withLock { $0.openConnections } }

    /// Whether ``shutdown(graceMilliseconds:)`` has begun.
    public var isShuttingDown: Bool { state.withLock { $0.isShuttingDown } }

    /// Stops accepting, closes idle connections, and waits for the requests in flight to
    /// be answered (each connection closes after its response).
    ///
    /// - Parameter graceMilliseconds: How long to wait for requests in flight.
    /// - Returns: Whether every connection closed within the grace period.
    @discardableResult
    public func shutdown(graceMilliseconds: Int) -> Bool {
        let first = state.withLock { state -> Bool in
            defer { state.isShuttingDown = true }
            return !state.isShuttingDown
        }
        if first {
            var byte: UInt8 = 1
            _ = write(wake.write, &byte, 1)
        }
        let deadline = MonotonicClock.nowNanoseconds() + UInt64(max(0, graceMilliseconds)) * 1_000_000
        while true {
            let (open, accepting) = state.withLock { ($0.openConnections, $0.acceptThreadRunning) }
            if open == 0 && !accepting { return true }
            if MonotonicClock.nowNanoseconds() >= deadline { return false }
            usleep(5_000)
        }
    }

    // MARK: Accepting

    private func acceptLoop() {
        defer {
            state.withLock {
                $0.listenerOpen = false
                $0.acceptThreadRunning = false
            }
            close(listener)
        }
        while true {
            switch Socket.wait(listener, wake: wake.read, timeoutMilliseconds: 60_000) {
            case .woken: return
            case .timedOut: continue
            case .failed: usleep(10_000); continue
            case .ready: break
            }
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listener, $0, &length) }
            }
            guard client >= 0 else {
                // Out of descriptors: pause rather than spin; other errors concern one client.
                if errno == EMFILE || errno == ENFILE { usleep(10_000) }
                continue
            }
            Socket.setCloseOnExec(client)
            let remote = Socket.describe(address).map { ListenAddress(host: $0.host, port: $0.port).description } ?? "?"
            let admitted = state.withLock { state -> Int? in
                guard !state.isShuttingDown, state.openConnections < configuration.maximumConnections else { return nil }
                state.openConnections += 1
                return state.openConnections
            }
            guard let count = admitted else {
                refuse(client, remote: remote)
                continue
            }
            observer?.openConnectionsChanged(to: count)
            Socket.setNoDelay(client)
            let thread = Thread { [self] in
                var connection = HTTPConnection(server: self, descriptor: client, remote: remote)
                connection.run()
                close(client)
                let count = state.withLock { state -> Int in
                    state.openConnections -= 1
                    return state.openConnections
                }
                observer?.openConnectionsChanged(to: count)
            }
            thread.stackSize = configuration.threadStackBytes
            thread.start()
        }
    }

    /// Answers a connection over the limit with `503` without reading its request, and closes it.
    private func refuse(_ client: Int32, remote: String) {
        observer?.connectionRefused(remote: remote)
        let response = HTTPResponse.text(.serviceUnavailable, "the hub has too many open connections; try again shortly",
                                         headers: [("Retry-After", "1")])
        let bytes = response.serializedHead(date: dates.current(), closing: true) + response.body
        _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        // Half-close and drain what already arrived, so the client reads the answer rather
        // than a reset.
        Socket.closeForWriting(client)
        var scratch = [UInt8](repeating: 0, count: 4_096)
        _ = recv(client, &scratch, scratch.count, Int32(MSG_DONTWAIT))
        close(client)
    }
}

/// The `Date` field's value, formatted once per second.
final class HTTPDateCache: Sendable {
    private let cache = ParkingLock<(second: Int, text: String)>((-1, ""))

    /// The current time as an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT").
    func current() -> String {
        var now = time(nil)
        return cache.withLock { cache in
            if cache.second == now { return cache.text }
            var parts = tm()
            gmtime_r(&now, &parts)
            var buffer = [CChar](repeating: 0, count: 64)
            let count = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
            cache = (now, String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self))
            return cache.text
        }
    }
}
