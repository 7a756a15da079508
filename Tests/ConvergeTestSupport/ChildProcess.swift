import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs one of the package's built executables, for end-to-end tests.
public enum ChildProcess {
    /// What a finished process returned.
    public struct Outcome: Sendable {
        public var status: Int32
        public var output: String
        public var errors: String
    }

    /// The package's root folder.
    public static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// The folder the running tests were built into (`.build/debug`, `.build/release`,
    /// or wherever `--build-path` and `-c` put them), where SwiftPM also puts the
    /// package's executables.
    ///
    /// Found as swift-argument-parser's test helpers find it: from the test bundle's own
    /// location. On Linux the test runner is the `.xctest` executable itself; on Apple
    /// platforms it is a `.xctest` bundle loaded by a runner.
    public static var productsFolder: URL {
        if let bundle = Bundle.allBundles.first(where: { $0.bundleURL.pathExtension == "xctest" }) {
            return bundle.bundleURL.deletingLastPathComponent()
        }
        let main = Bundle.main.bundleURL
        return main.pathExtension == "xctest" ? main.deletingLastPathComponent() : main
    }

    /// The built executable `name`, beside the tests (`swift test` builds the executables
    /// a test target depends on, in the same configuration).
    public static func executable(_ name: String) -> URL {
        productsFolder.appendingPathComponent(name)
    }

    /// A child that was still running, or whose output was still open, at its deadline.
    public struct TimedOut: Error, CustomStringConvertible {
        /// The executable's name and its arguments.
        public var command: String
        /// The deadline it missed.
        public var seconds: Double
        /// What it printed on standard output by then.
        public var output: String
        /// What it printed on standard error by then.
        public var errors: String

        public var description: String {
            "\(command) did not finish within \(seconds) s (killed); it printed: \(output.suffix(2_000)) \(errors.suffix(2_000))"
        }
    }

    /// Runs `executable` with `arguments` in `folder` and waits for it.
    ///
    /// Standard output and standard error are read together (a child filling one pipe
    /// while the test waits on the other would block both), until both are closed. A child
    /// still running, or whose pipes something still holds, after `timeoutSeconds` is
    /// killed and the run throws ``TimedOut``: a test fails with the command's name instead
    /// of hanging the whole test run.
    ///
    /// - Parameter environment: Variables to set (or, with `nil`, to remove) in the
    ///   child's copy of this process's environment.
    public static func run(_ executable: URL, _ arguments: [String], in folder: URL,
                           environment: [String: String?] = [:], timeoutSeconds: Double = 600) throws -> Outcome {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = folder
        if !environment.isEmpty {
            var merged = ProcessInfo.processInfo.environment
            for (name, value) in environment { merged[name] = value }
            process.environment = merged
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()   // closes this process's copies of the pipes' write ends
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        var streams = [(fd: out.fileHandleForReading.fileDescriptor, bytes: [UInt8]()),
                       (fd: err.fileHandleForReading.fileDescriptor, bytes: [UInt8]())]
        var open = [true, true]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        func timedOut() -> TimedOut {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            return TimedOut(command: ([executable.lastPathComponent] + arguments).joined(separator: " "), seconds: timeoutSeconds,
                            output: String(decoding: streams[0].bytes, as: UTF8.self),
                            errors: String(decoding: streams[1].bytes, as: UTF8.self))
        }
        while open.contains(true) {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw timedOut() }
            var descriptors = streams.indices.map { pollfd(fd: open[$0] ? streams[$0].fd : -1, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&descriptors, nfds_t(descriptors.count), Int32(min(remaining, 1) * 1_000))
            if ready < 0 && errno != EINTR { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            for index in streams.indices where open[index] && descriptors[index].revents != 0 {
                let count = read(streams[index].fd, &buffer, buffer.count)
                if count > 0 {
                    streams[index].bytes.append(contentsOf: buffer[0..<count])
                } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                    open[index] = false
                }
            }
        }
        // Both pipes closed: the child may still run (it closed or handed them on).
        while process.isRunning {
            guard deadline.timeIntervalSinceNow > 0 else { throw timedOut() }
            usleep(10_000)
        }
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: String(decoding: streams[0].bytes, as: UTF8.self),
                       errors: String(decoding: streams[1].bytes, as: UTF8.self))
    }
}
