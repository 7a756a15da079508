import Converge
import Foundation

/// The store's memory against a `[String: Data]` holding the same content, each measured
/// in a fresh child process (`converge-bench --memory-probe HOLDER KEYS`), so memory freed
/// by earlier benchmarks cannot hide what a holder takes.
enum MemoryBenchmarks {
    enum Holder: String, CaseIterable {
        case store
        case dictionary
        /// A store that took a peer's array of KEYS booleans from its encoding (a sync).
        case receivedArray = "received-array"
        /// The same encoding held as `[String: Data]`.
        case arrayBytes = "array-bytes"
    }

    /// A peer's state holding one array of `elements` booleans, encoded as it travels.
    static func peerArray(elements: Int) -> [UInt8] {
        var map = ReplicatedMap()
        map.write(.array(Array(repeating: .bool(true), count: elements)), forKey: "big", replica: "peer",
                  timestamp: HybridTimestamp(wallMilliseconds: 1_700_000_000_000, logical: 0))
        return map.encoded()
    }

    /// The content at `keys` keys: iCloud-sized (1 MB of values over 1,024 keys) up to
    /// 1,024 keys, integers above, as an app would store a counter per key.
    static func content(keys: Int, index: Int) -> (key: String, value: Value, data: Data) {
        if keys <= 1_024 {
            let data = Data(repeating: UInt8(index % 251), count: Quota.iCloud.maximumTotalValueBytes / 1_024 - 8)
            return (String(format: "key-%04d", index), .data(data), data)
        }
        return ("key-\(index)", .integer(Int64(index)), withUnsafeBytes(of: Int64(index).littleEndian) { Data($0) })
    }

    /// The child's side: builds the holder, then prints the content's bytes (keys and
    /// values) and the growth of anonymous resident memory while building it.
    static func probe(_ arguments: [String]) {
        guard arguments.count == 2, let holder = Holder(rawValue: arguments[0]), let keys = Int(arguments[1]), keys > 0 else {
            failUsage("--memory-probe needs a holder (\(Holder.allCases.map(\.rawValue).joined(separator: ", "))) and a number of keys")
        }
        // Touch the code paths first, so memory the runtime sets up on first use is not
        // counted as the holder's.
        do {
            let warm = StoreBenchmarks.emptyStore()
            var dictionary: [String: Data] = [:]
            for index in 0..<16 {
                let (key, value, data) = content(keys: keys, index: index)
                try! warm.setValue(value, forKey: key)
                dictionary[key] = data
            }
            blackHole((warm, dictionary))
        }
        var contentBytes = 0
        // The received bytes exist before either holder is built (the message of a sync).
        let received = [.receivedArray, .arrayBytes].contains(holder) ? peerArray(elements: keys) : []
        let before = Measure.residentBytes() ?? 0
        let held: Any
        switch holder {
        case .store:
            let store = StoreBenchmarks.emptyStore()
            for index in 0..<keys {
                let (key, value, data) = content(keys: keys, index: index)
                try! store.setValue(value, forKey: key)
                contentBytes += key.utf8.count + data.count
            }
            precondition(store.usage.keyCount == keys)
            held = store
        case .dictionary:
            var dictionary: [String: Data] = [:]
            for index in 0..<keys {
                let (key, _, data) = content(keys: keys, index: index)
                dictionary[key] = data
                contentBytes += key.utf8.count + data.count
            }
            precondition(dictionary.count == keys)
            held = dictionary
        case .receivedArray:
            let store = StoreBenchmarks.emptyStore()
            try! store.merge(try! ReplicatedMap.Delta(encoded: received))
            precondition(store.usage.keyCount == 1)
            contentBytes = received.count
            held = store
        case .arrayBytes:
            held = ["big": Data(received)]
            contentBytes = received.count
        }
        let after = Measure.residentBytes() ?? 0
        blackHole((held, received))
        print(contentBytes, after - before)
    }

    /// Runs one probe in a child process: (content bytes, resident bytes).
    static func runProbe(_ holder: Holder, keys: Int) -> (content: Double, resident: Double) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["--memory-probe", holder.rawValue, String(keys)]
        let out = Pipe()
        process.standardOutput = out
        try! process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let numbers = text.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
        precondition(process.terminationStatus == 0 && numbers.count == 2 && numbers[1] > 0, "the memory probe failed: \(text)")
        return (numbers[0], numbers[1])
    }

    /// memory.N: the median over probes of each holder's resident growth, and their ratio.
    /// With `received`, the store took one peer's array of `keys` booleans from bytes, and
    /// the baseline holds those bytes (memory.peer-array).
    static func compare(keys: Int, name: String, received: Bool = false) -> BenchmarkResult {
        var store: [Double] = [], dictionary: [Double] = [], content = 0.0
        let (storeHolder, baselineHolder): (Holder, Holder) = received ? (.receivedArray, .arrayBytes) : (.store, .dictionary)
        for _ in 0..<Measure.repetitions {
            let s = runProbe(storeHolder, keys: keys), d = runProbe(baselineHolder, keys: keys)
            precondition(s.content == d.content, "the two holders were given different content")
            store.append(s.resident)
            dictionary.append(d.resident)
            content = s.content
        }
        let storeBytes = store.sorted()[store.count / 2], dictionaryBytes = dictionary.sorted()[dictionary.count / 2]
        if received {
            return BenchmarkResult(name: name, figures: [
                ("elements", Double(keys)), ("encoded_bytes", content), ("store_bytes", storeBytes), ("bytes_as_data", dictionaryBytes),
            ], ratio: storeBytes / dictionaryBytes, atMost: 1.3)
        }
        return BenchmarkResult(name: name, figures: [
            ("keys", Double(keys)), ("content_bytes", content), ("store_bytes", storeBytes), ("dictionary_bytes", dictionaryBytes),
            ("store_bytes_per_key", storeBytes / Double(keys)), ("dictionary_bytes_per_key", dictionaryBytes / Double(keys)),
        ], ratio: storeBytes / dictionaryBytes, atMost: 1.3)
    }
}
