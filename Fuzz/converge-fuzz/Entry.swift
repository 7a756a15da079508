import Foundation

#if FUZZING
/// libFuzzer's driver, which the executable's entry point hands over to.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>,
                     _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                     _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// The executable's entry point when built by `Fuzz/run` (`-sanitize=fuzzer,address
/// -DFUZZING`): SwiftPM names it `<module>_main`, so libFuzzer's own `main` is not used and
/// its driver is called instead. The target comes from `CONVERGE_FUZZ_TARGET`.
@_cdecl("converge_fuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    _ = FuzzEntry.target
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { data, size in fuzzOneInput(data, size) }
}

/// One input, as libFuzzer hands it over (its runtime also refers to this symbol).
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzEntry.target.run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}

enum FuzzEntry {
    static let target: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["CONVERGE_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            fatalError("CONVERGE_FUZZ_TARGET must name a target: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return target
    }()
}
#else
/// Without the fuzzer: replays a corpus through the same checks, so `swift test` keeps
/// every input the fuzzer ever found interesting.
///
///     converge-fuzz [--broken-encoder] TARGET FILE_OR_FOLDER...
///     converge-fuzz --write-seeds FOLDER
///
/// `--broken-encoder` checks against an encoder that appends a byte: the round-trip
/// checks must then fail (the test that shows they can).
@main
enum ConvergeFuzz {
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.count == 2 && arguments[0] == "--write-seeds" {
            do { try FuzzSeeds.write(to: arguments[1]) } catch {
                FileHandle.standardError.write(Data("converge-fuzz: \(error)\n".utf8))
                exit(1)
            }
            return
        }
        let brokenEncoder = arguments.first == "--broken-encoder"
        if brokenEncoder { arguments.removeFirst() }
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
            FileHandle.standardError.write(Data("usage: converge-fuzz TARGET FILE_OR_FOLDER...\ntargets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))\n".utf8))
            exit(2)
        }
        var count = 0
        for path in arguments.dropFirst() {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
                FileHandle.standardError.write(Data("converge-fuzz: no such file or folder: \(path)\n".utf8))
                exit(1)
            }
            let files = isFolder.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                target.run([UInt8](data), brokenEncoder: brokenEncoder)
                count += 1
            }
        }
        print("converge-fuzz \(target.rawValue): \(count) inputs replayed, every check held")
    }
}
#endif
