import Converge
import ConvergeSQLite
import Foundation

// converge-stress-writer PATH REPLICA COUNT: a test-only tool for the kill -9 crash test.
// It writes keys `stress-0`, `stress-1`, … to the SQLite store at PATH as replica REPLICA,
// one durable transaction each, and prints `durable stress-N` once each write has
// returned: every key it printed must survive a SIGKILL at any moment.
// Exit codes: 0 done, 1 a write failed, 2 bad usage.

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 3, let replica = ReplicaID(arguments[arguments.startIndex + 1]),
      let total = Int(arguments[arguments.startIndex + 2]), total > 0 else {
    FileHandle.standardError.write(Data("usage: converge-stress-writer PATH REPLICA COUNT\n".utf8))
    exit(2)
}
do {
    let store = try ReplicatedKeyValueStore(replicaID: replica, storage: SQLiteStorage(path: arguments[arguments.startIndex]))
    for index in 0..<total {
        try store.setValue(.integer(Int64(index)), forKey: "stress-\(index)")
        print("durable stress-\(index)")
        fflush(nil)
    }
} catch {
    FileHandle.standardError.write(Data("converge-stress-writer: \(error)\n".utf8))
    exit(1)
}
