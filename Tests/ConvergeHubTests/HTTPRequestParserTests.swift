@testable import ConvergeHub
import ConvergeSimulation
import ConvergeTestSupport
import Testing

@Suite("HTTP request parser: a pure state machine over bytes")
struct HTTPRequestParserTests {
    /// Every event of parsing `text` fed at once.
    static func events(_ text: String, limits: HTTPLimits = HTTPLimits()) -> [HTTPRequestParser.Event] {
        var parser = HTTPRequestParser(limits: limits)
        parser.append(contentsOf: Array(text.utf8))
        var events: [HTTPRequestParser.Event] = []
        while true {
            let event = parser.next()
            if event == .needMoreBytes { return events }
            events.append(event)
            if case .failure = event { return events }
        }
    }

    static func failure(_ text: String, limits: HTTPLimits = HTTPLimits()) -> HTTPParseError.Kind? {
        if case .failure(let error) = events(text, limits: limits).last { return error.kind }
        return nil
    }

    @Test func aPostWithABodyGivesItsHeadThenTheWholeRequest() throws {
        let events = Self.events("POST /sync HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer abc\r\nContent-Length: 5\r\n\r\nhello")
        #expect(events.count == 2)
        guard case .head(let head) = events.first, case .request(let request) = events.last else {
            Issue.record("expected a head and a request, got \(events)")
            return
        }
        #expect(head.method == "POST" && head.target == "/sync" && head.minorVersion == 1)
        #expect(head.headers["authorization"] == "Bearer abc" && head.headers["AUTHORIZATION"] == "Bearer abc")
        #expect(head.contentLength == 5 && head.keepAlive && !head.expectsContinue)
        #expect(request.head == head && request.body == Array("hello".utf8))
    }

    @Test func pipelinedRequestsComeOutInOrderWhateverTheChunking() {
        let text = "GET /health HTTP/1.1\r\nHost: h\r\n\r\nPOST /sync HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nabGET /metrics?x=1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
        let whole = Self.events(text)
        let paths = whole.compactMap { event -> String? in
            if case .request(let request) = event { return "\(request.head.path)" }
            return nil
        }
        #expect(paths == ["/health", "/sync", "/metrics"])
        // Byte by byte gives the same events.
        var parser = HTTPRequestParser()
        var byteByByte: [HTTPRequestParser.Event] = []
        for byte in text.utf8 {
            parser.append(contentsOf: [byte])
            while case let event = parser.next(), event != .needMoreBytes { byteByByte.append(event) }
        }
        #expect(byteByByte == whole)
        if case .request(let last) = whole.last { #expect(!last.head.keepAlive) }
    }

    @Test func keepAliveFollowsTheVersionAndTheConnectionField() {
        func keepAlive(_ text: String) -> Bool? {
            if case .head(let head) = Self.events(text).first { return head.keepAlive }
            return nil
        }
        #expect(keepAlive("GET / HTTP/1.1\r\nHost: h\r\n\r\n") == true)
        #expect(keepAlive("GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Close\r\n\r\n") == false)
        #expect(keepAlive("GET / HTTP/1.0\r\n\r\n") == false)
        #expect(keepAlive("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n") == true)
    }

    @Test func absoluteFormIsReducedToThePath() {
        if case .head(let head) = Self.events("GET http://hub.example:8080/health?x HTTP/1.1\r\nHost: h\r\n\r\n").first {
            #expect(head.target == "/health?x" && head.path == "/health")
        } else {
            Issue.record("absolute form refused")
        }
    }

    @Test func expectContinueIsReportedAndOtherExpectationsRefused() {
        if case .head(let head) = Self.events("POST /sync HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 9\r\n\r\n").first {
            #expect(head.expectsContinue)
        } else {
            Issue.record("no head")
        }
        #expect(Self.failure("POST /sync HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n") == .unsupportedExpectation)
    }

    @Test(arguments: [
        ("garbage\r\n\r\n", HTTPParseError.Kind.malformed),
        ("GET /x HTTP/1.1\r\n\r\n", .malformed),                                            // no Host
        ("GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", .malformed),
        ("GET /x HTTP/2.0\r\nHost: a\r\n\r\n", .unsupportedVersion),
        ("GET /x HTTP/1.1\nHost: a\n\n", .malformed),                                        // bare LF
        ("GET /x HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", .malformed),
        ("GET /x HTTP/1.1\r\nHost : a\r\n\r\n", .malformed),                                 // space before the colon
        ("GET /x HTTP/1.1\r\nHost: a\rb\r\n\r\n", .malformed),                               // CR inside a value
        ("GET x HTTP/1.1\r\nHost: a\r\n\r\n", .malformed),
        ("GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", .malformed),
        ("POST /sync HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", .malformed),
        ("POST /sync HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", .malformed),
        ("POST /sync HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", .malformed),
        ("POST /sync HTTP/1.1\r\nHost: a\r\nContent-Length: 16777217\r\n\r\n", .bodyTooLarge),
        ("POST /sync HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", .unsupportedTransferEncoding),
        ("POST /sync HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\n", .unsupportedTransferEncoding),
    ])
    func malformedOrUnsupportedRequestsAreRefusedWithTheirKind(text: String, kind: HTTPParseError.Kind) {
        #expect(Self.failure(text) == kind, "\(text.debugDescription)")
    }

    @Test func everyLimitIsEnforcedBeforeTheHeadIsComplete() {
        let limits = HTTPLimits(maximumRequestLineBytes: 64, maximumHeadBytes: 256, maximumHeaderCount: 4, maximumBodyBytes: 100)
        // A request line that never ends is refused once it passes the limit.
        #expect(Self.failure("GET /" + String(repeating: "a", count: 100), limits: limits) == .requestLineTooLong)
        // A head that never ends, likewise.
        let longField = "GET / HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "v", count: 300)
        #expect(Self.failure(longField, limits: limits) == .headTooLarge)
        let manyFields = "GET / HTTP/1.1\r\nHost: h\r\n" + String(repeating: "X: 1\r\n", count: 5) + "\r\n"
        #expect(Self.failure(manyFields, limits: limits) == .headTooLarge)
        #expect(Self.failure("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 101\r\n\r\n", limits: limits) == .bodyTooLarge)
        #expect(HTTPParseError(.headTooLarge, "").status == .requestHeaderFieldsTooLarge)
        #expect(HTTPParseError(.unsupportedTransferEncoding, "").status == .notImplemented)
    }

    @Test func afterAFailureTheParserKeepsFailing() {
        var parser = HTTPRequestParser()
        parser.append(contentsOf: Array("BAD\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n".utf8))
        let first = parser.next()
        guard case .failure = first else {
            Issue.record("accepted garbage: \(first)")
            return
        }
        #expect(parser.next() == first)
    }

    @Test func theFuzzCheckCatchesBrokenParsers() {
        let input = Array("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: h\r\n\r\n".utf8)
        #expect(HTTPRequestParser.fuzzCheck(input, splitSeed: 1) == nil)
        // A parser that loses bytes split across chunks (it keeps only each chunk's own).
        let forgetful: ([ArraySlice<UInt8>], HTTPLimits) -> [HTTPRequestParser.Event] = { chunks, limits in
            chunks.flatMap { HTTPRequestParser.events(parsing: [$0], limits: limits) }
        }
        #expect(HTTPRequestParser.fuzzCheck(input, splitSeed: 1, parse: forgetful)?.hasPrefix("whole input gave") == true)
        // A parser that truncates bodies.
        let truncating: ([ArraySlice<UInt8>], HTTPLimits) -> [HTTPRequestParser.Event] = { chunks, limits in
            HTTPRequestParser.events(parsing: chunks, limits: limits).map { event in
                guard case .request(var request) = event else { return event }
                request.body = Array(request.body.dropLast())
                return .request(request)
            }
        }
        #expect(HTTPRequestParser.fuzzCheck(input, splitSeed: 1, parse: truncating)?.hasPrefix("a body of 4 bytes") == true)
        // A parser that mangles a head so it no longer round-trips.
        let mangling: ([ArraySlice<UInt8>], HTTPLimits) -> [HTTPRequestParser.Event] = { chunks, limits in
            HTTPRequestParser.events(parsing: chunks, limits: limits).map { event in
                guard case .head(var head) = event else { return event }
                head.keepAlive.toggle()
                return .head(head)
            }
        }
        #expect(HTTPRequestParser.fuzzCheck(input, splitSeed: 1, parse: mangling)?.contains("parsed again") == true)
    }

    /// Valid requests to mutate.
    static let seeds: [[UInt8]] = [
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
        "POST /sync HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer cvgh_abc\r\nContent-Type: application/octet-stream\r\nContent-Length: 7\r\n\r\n\u{C7}\u{01}\u{04}abcd",
        "POST /sync HTTP/1.1\r\nHost: hub\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nxyzGET /metrics HTTP/1.1\r\nHost: h\r\n\r\n",
        "GET http://h/x?y HTTP/1.0\r\nConnection: keep-alive\r\nX-Latin: caf\u{E9}\r\n\r\n",
        "\r\n\r\nGET / HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n",
    ].map { Array($0.utf8) }

    @Test func aMillionMutatedRequestsNeverCrashAndParseAlikeWhateverTheChunking() {
        // Seeded, so a failure is reproducible; `CONVERGE_PROPERTY_SCALE` multiplies it.
        var generator = Xoshiro256StarStar(seed: 1_515)
        let small = HTTPLimits(maximumRequestLineBytes: 40, maximumHeadBytes: 120, maximumHeaderCount: 4, maximumBodyBytes: 16)
        let fragments: [[UInt8]] = ["\r\n", "\r", "\n", ":", " ", "Content-Length: ", "Transfer-Encoding: chunked", "Host: h",
                                    "HTTP/1.1", "HTTP/1.0", "HTTP/9.9", "GET ", "\t", "\u{0}", "\u{FF}", "99999999999999999999"].map { Array($0.utf8) }
        let rounds = 1_000_000 * PropertyConfiguration.scale
        var heads = 0, failures = 0
        for round in 0..<rounds {
            var bytes = Self.seeds[round % Self.seeds.count]
            for _ in 0..<generator.next(in: 1...3) {
                switch generator.next(below: 5) {
                case 0: bytes[generator.next(below: bytes.count)] = UInt8(truncatingIfNeeded: generator.next())
                case 1: bytes.removeLast(generator.next(in: 0...(bytes.count - 1)))
                case 2: bytes.insert(contentsOf: fragments[generator.next(below: fragments.count)], at: generator.next(below: bytes.count + 1))
                case 3:
                    let from = generator.next(below: bytes.count)
                    bytes.insert(contentsOf: bytes[from..<min(bytes.count, from + generator.next(in: 1...20))], at: generator.next(below: bytes.count))
                default: bytes.remove(at: generator.next(below: bytes.count))
                }
                if bytes.isEmpty { bytes = [0x0D] }
            }
            // Every few rounds only (the whole check parses three times); the rest parse once.
            if round % 8 == 0 {
                let limits = round % 16 == 0 ? small : HTTPLimits()
                if let problem = HTTPRequestParser.fuzzCheck(bytes, splitSeed: UInt64(round), limits: limits) {
                    Issue.record("round \(round): \(problem)\ninput: \(String(decoding: bytes, as: UTF8.self).debugDescription)")
                    return
                }
                continue
            }
            var parser = HTTPRequestParser()
            parser.append(contentsOf: bytes)
            loop: while true {
                switch parser.next() {
                case .needMoreBytes: break loop
                case .head: heads += 1
                case .request: continue
                case .failure: failures += 1; break loop
                }
            }
        }
        // The mutations reach both sides: accepted heads and every kind of refusal.
        #expect(heads > rounds / 10 && failures > rounds / 10)
    }
}
