extension HTTPRequestParser {
    /// Checks the parser on one input, as a fuzzer would: the entry point for the seeded
    /// mutation test in `swift test` and for a libFuzzer target
    /// (`LLVMFuzzerTestOneInput` calls it and traps on a non-`nil` result).
    ///
    /// It parses `input` whole and again split into chunks at places drawn from
    /// `splitSeed`, and checks that
    /// - both give the same events (the parser does not depend on how bytes arrive);
    /// - every request's body has its head's `Content-Length`;
    /// - every head accepted serializes to bytes that parse back to the same head;
    /// - nothing is returned after a failure but that failure.
    ///
    /// - Parameters:
    ///   - input: Any bytes.
    ///   - splitSeed: Chooses the chunk boundaries of the second parse.
    ///   - limits: The limits to parse under (small ones reach the limit checks sooner).
    ///   - parse: The parse under test: every event of a sequence of chunks (a test passes
    ///     a deliberately broken one to show the check catches it).
    /// - Returns: A description of the first property broken, or `nil`.
    /// - Complexity: O(*n*) for *n* bytes of input.
    package static func fuzzCheck(_ input: [UInt8], splitSeed: UInt64, limits: HTTPLimits = HTTPLimits(),
                                  parse: ([ArraySlice<UInt8>], HTTPLimits) -> [Event] = events(parsing:limits:)) -> String? {
        let whole = parse([input[...]], limits)
        var chunks: [ArraySlice<UInt8>] = []
        var state = splitSeed | 1
        var offset = 0
        while offset < input.count {
            // xorshift: cheap, deterministic chunk sizes of 1...16 bytes.
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            let size = min(input.count - offset, 1 + Int(state % 16))
            chunks.append(input[offset..<(offset + size)])
            offset += size
        }
        let split = parse(chunks, limits)
        guard whole == split else {
            return "whole input gave \(whole.map(Self.describe)), split into \(chunks.count) chunks gave \(split.map(Self.describe))"
        }
        var failed = false
        for event in whole {
            switch event {
            case .needMoreBytes:
                break
            case .failure:
                if failed { return "an event after a failure" }
                failed = true
            case .head(let head):
                if failed { return "a head after a failure" }
                // Serializing normalizes spacing, so the head may grow: parse it back
                // without the head's size limits.
                var unbounded = limits
                unbounded.maximumHeadBytes = .max / 2
                unbounded.maximumRequestLineBytes = .max / 2
                var parser = HTTPRequestParser(limits: unbounded)
                parser.append(contentsOf: head.serialized())
                let again = parser.next()
                guard again == .head(head) else { return "head \(head) serialized and parsed again gave \(Self.describe(again))" }
            case .request(let request):
                if failed { return "a request after a failure" }
                guard request.body.count == request.head.contentLength else {
                    return "a body of \(request.body.count) bytes for a Content-Length of \(request.head.contentLength)"
                }
            }
        }
        return nil
    }

    /// Every event of parsing `chunks` in order, calling ``next()`` until it needs bytes
    /// after each chunk (and stopping after a failure).
    package static func events(parsing chunks: [ArraySlice<UInt8>], limits: HTTPLimits) -> [Event] {
        var parser = HTTPRequestParser(limits: limits)
        var events: [Event] = []
        for chunk in chunks {
            parser.append(contentsOf: chunk)
            while true {
                let event = parser.next()
                if event == .needMoreBytes { break }
                events.append(event)
                if case .failure = event { return events }
            }
        }
        return events
    }

    private static func describe(_ event: Event) -> String {
        switch event {
        case .needMoreBytes: "needMoreBytes"
        case .head(let head): "head(\(head.method) \(head.target))"
        case .request(let request): "request(\(request.head.method) \(request.head.target), \(request.body.count) bytes)"
        case .failure(let error): "failure(\(error))"
        }
    }
}
