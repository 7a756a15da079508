#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call on a socket: what was being done and the `errno` it left.
public struct SocketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was being done ("bind 127.0.0.1:8080").
    public var operation: String
    /// The system's error number.
    public var code: Int32

    /// An error of `operation` ("bind 127.0.0.1:8080") with the system's error number.
    public init(_ operation: String, code: Int32 = errno) {
        self.operation = operation
        self.code = code
    }

    public var description: String { "cannot \(operation): \(String(cString: strerror(code)))" }
}

/// An address to listen on, parsed from `HOST:PORT` (`[::1]:8080` for IPv6).
public struct ListenAddress: Hashable, Sendable, CustomStringConvertible {
    /// A host name or an IP address (without brackets for IPv6).
    public var host: String
    /// The TCP port; 0 asks the system for a free one.
    public var port: UInt16

    /// An address to listen on.
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`; `nil` if it is not of that shape or the port is out of range.
    public init?(_ text: String) {
        var host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") { return nil }
        }
        guard !host.isEmpty, !portText.isEmpty, portText.allSatisfy(\.isASCII), let port = UInt16(portText) else { return nil }
        if host == "*" { host = "0.0.0.0" }
        self.init(host: String(host), port: port)
    }

    /// `HOST:PORT`, with brackets around an IPv6 host.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Thin wrappers over the POSIX socket calls the server makes, each failure a ``SocketError``.
enum Socket {
    /// Opens a listening TCP socket on `address` (port 0 picks a free port) and returns it
    /// with the address actually bound.
    static func openListener(on address: ListenAddress, backlog: Int32) throws(SocketError) -> (descriptor: Int32, bound: ListenAddress) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(address.host, String(address.port), &hints, &list)
        guard resolved == 0, let first = list else {
            throw SocketError("resolve \(address.host) (\(String(cString: gai_strerror(resolved))))", code: EINVAL)
        }
        defer { freeaddrinfo(list) }
        var lastError = SocketError("listen on \(address)", code: EADDRNOTAVAIL)
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let descriptor = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            guard descriptor >= 0 else { lastError = SocketError("create a socket"); continue }
            setCloseOnExec(descriptor)
            var one: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            guard bind(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
                lastError = SocketError("bind \(address)")
                close(descriptor)
                continue
            }
            guard listen(descriptor, backlog) == 0 else {
                lastError = SocketError("listen on \(address)")
                close(descriptor)
                continue
            }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            guard named == 0, let bound = describe(storage) else {
                close(descriptor)
                throw SocketError("read the bound address")
            }
            return (descriptor, ListenAddress(host: bound.host, port: bound.port))
        }
        throw lastError
    }

    /// The numeric host and port of a socket address.
    static func describe(_ storage: sockaddr_storage) -> (host: String, port: UInt16)? {
        var storage = storage
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let length = socklen_t(storage.ss_family == sa_family_t(AF_INET6) ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard result == 0, let port = UInt16(text(service)) else { return nil }
        return (text(host), port)
    }

    /// The text of a NUL-terminated C buffer.
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Stops sending (the peer reads end of file) while still receiving.
    static func closeForWriting(_ descriptor: Int32) {
        #if canImport(Glibc)
        _ = Glibc.shutdown(descriptor, Int32(SHUT_WR))
        #else
        _ = Darwin.shutdown(descriptor, SHUT_WR)
        #endif
    }

    static func setCloseOnExec(_ descriptor: Int32) {
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    }

    /// Sends small responses at once rather than waiting to fill a packet.
    static func setNoDelay(_ descriptor: Int32) {
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// What waiting for a descriptor gave.
    enum Readiness {
        case ready
        case timedOut
        /// The wake-up descriptor became readable: the server is shutting down.
        case woken
        case failed(Int32)
    }

    /// Waits until `descriptor` can be read (or written), `wake` becomes readable, or
    /// `timeoutMilliseconds` pass.
    static func wait(_ descriptor: Int32, forWriting: Bool = false, wake: Int32? = nil, timeoutMilliseconds: Int) -> Readiness {
        var descriptors = [pollfd(fd: descriptor, events: Int16(forWriting ? POLLOUT : POLLIN), revents: 0)]
        if let wake { descriptors.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0)) }
        while true {
            let result = poll(&descriptors, nfds_t(descriptors.count), Int32(clamping: max(0, timeoutMilliseconds)))
            if result < 0 {
                if errno == EINTR { continue }
                return .failed(errno)
            }
            if result == 0 { return .timedOut }
            if descriptors.count > 1 && descriptors[1].revents != 0 && descriptors[0].revents == 0 { return .woken }
            return .ready
        }
    }
}

/// A monotonic clock for deadlines (never the wall clock, which may jump).
enum MonotonicClock {
    static func nowNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Milliseconds left until `deadline` (nanoseconds on this clock), at least 0.
    static func millisecondsUntil(_ deadline: UInt64) -> Int {
        let now = nowNanoseconds()
        return deadline > now ? Int((deadline - now + 999_999) / 1_000_000) : 0
    }
}
