import Converge
import ConvergeSQLite
import Foundation

// converge-stress-writer PATH REPLICA COUNT [PREFIX]: a test-only tool for the kill -9
// crash test and the tests of several processes writing one store file. It writes keys
// `PREFIX0`, `PREFIX1`, … (PREFIX is `stress-` by default) to the SQLite store at PATH as
// replica REPLICA, one durable transaction each, and prints `durable KEY` once each write
// has returned: every key it printed must survive a SIGKILL at any moment.
// Exit codes: 0 done, 1 a write failed, 2 bad usage.

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 3 || arguments.count == 4, let replica = ReplicaID(arguments[arguments.startIndex + 1]),
      let total = Int(arguments[arguments.startIndex + 2]), total > 0 else {
    FileHandle.standardError.write(Data("usage: converge-stress-writer PATH REPLICA COUNT [PREFIX]\n".utf8))
    exit(2)
}
let prefix = arguments.count == 4 ? arguments[arguments.startIndex + 3] : "stress-"
do {
    let store = try ReplicatedKeyValueStore(replicaID: replica, storage: SQLiteStorage(path: arguments[arguments.startIndex]))
    for index in 0..<total {
        try store.setValue(.integer(Int64(index)), forKey: "\(prefix)\(index)")
        print("durable \(prefix)\(index)")
        fflush(nil)
    }
} catch {
    FileHandle.standardError.write(Data("converge-stress-writer: \(error)\n".utf8))
    exit(1)
}
