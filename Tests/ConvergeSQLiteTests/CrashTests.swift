import Converge
import ConvergeSQLite
import ConvergeSimulation
import ConvergeTestSupport
import Foundation
import Testing

@Suite("Durability under kill -9")
struct CrashTests {
    /// A child process writes keys durably, one transaction each, and prints each key once
    /// its write returned; it is killed with SIGKILL at seeded random moments. Every key it
    /// reported must be there after reopening, and SQLite's integrity check must pass.
    @Test func everyWriteReportedDurableSurvivesKillMinusNine() throws {
        let folder = temporaryFolder()
        let path = folder.appendingPathComponent("store.sqlite").path
        var generator = Xoshiro256StarStar(seed: 9)
        var reportedTotal = 0
        for round in 0..<5 {
            let process = Process()
            process.executableURL = ChildProcess.executable("converge-stress-writer")
            process.arguments = [path, "crash", "1000000"]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Kill after a seeded number of reported writes (bounded), mid-stream.
            let target = generator.next(in: 20...400)
            var reported: [String] = []
            var buffer = Data()
            let reader = out.fileHandleForReading
            while reported.count < target {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    if line.hasPrefix("durable ") { reported.append(String(line.dropFirst(8))) }
                }
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal, "round \(round): the child exited before it was killed")
            let storage = try SQLiteStorage(path: path)
            #expect(try storage.integrityCheck() == ["ok"], "round \(round)")
            let store = try ReplicatedKeyValueStore(replicaID: "crash", storage: storage)
            let missing = reported.filter { store.value(forKey: $0) == nil }
            #expect(missing.isEmpty, "round \(round): \(missing.count) writes reported durable are missing, first \(missing.prefix(3))")
            reportedTotal += reported.count
        }
        #expect(reportedTotal > 100)
    }
}
