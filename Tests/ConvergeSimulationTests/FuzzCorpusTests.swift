import ConvergeTestSupport
import Foundation
import Testing

/// Every input the fuzzer kept (Fuzz/corpus) still passes every check of its target,
/// replayed by `converge-fuzz` built without the fuzzer; and the targets' checks can fail.
@Suite("Fuzz corpus: replayed through the fuzz targets' checks")
struct FuzzCorpusTests {
    static var binary: URL { ChildProcess.executable("converge-fuzz") }
    static let targets = ["message", "folder-file", "delta", "hub-state", "scenario", "trace"]

    @Test(arguments: targets)
    func theCorpusPassesEveryCheck(target: String) throws {
        let corpus = ChildProcess.packageRoot.appendingPathComponent("Fuzz/corpus/\(target)")
        let files = try FileManager.default.contentsOfDirectory(atPath: corpus.path)
        #expect(!files.isEmpty, "no corpus for \(target)")
        let outcome = try ChildProcess.run(Self.binary, [target, corpus.path], in: ChildProcess.packageRoot)
        #expect(outcome.status == 0, "\(outcome.errors)")
        #expect(outcome.output.contains("\(files.count) inputs replayed, every check held"), "\(outcome.output)")
    }

    /// The round-trip checks catch an encoder that is not canonical (one that appends a byte).
    @Test(arguments: [("message", "an accepted message re-encodes to other bytes"),
                      ("delta", "an accepted delta re-encodes to other bytes"),
                      ("hub-state", "an accepted hub state re-encodes to other bytes")])
    func theRoundTripCheckCatchesABrokenEncoder(target: String, message: String) throws {
        let corpus = ChildProcess.packageRoot.appendingPathComponent("Fuzz/corpus/\(target)")
        let outcome = try ChildProcess.run(Self.binary, ["--broken-encoder", target, corpus.path], in: ChildProcess.packageRoot)
        #expect(outcome.status != 0)
        #expect(outcome.errors.contains("fuzz check failed: \(message)"), "\(outcome.errors)")
    }

    @Test func aMissingCorpusOrUnknownTargetIsAClearError() throws {
        let outcome = try ChildProcess.run(Self.binary, ["message", "/nonexistent/corpus"], in: ChildProcess.packageRoot)
        #expect(outcome.status == 1 && outcome.errors.contains("no such file or folder"))
        let usage = try ChildProcess.run(Self.binary, ["no-such-target"], in: ChildProcess.packageRoot)
        #expect(usage.status == 2 && usage.errors.contains("targets: message"))
    }
}
