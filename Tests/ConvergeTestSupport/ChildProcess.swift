import Foundation

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

    /// The debug build of executable `name` (built by `swift test`, which depends on it).
    public static func executable(_ name: String) -> URL {
        packageRoot.appendingPathComponent(".build/debug/\(name)")
    }

    /// Runs `executable` with `arguments` in `folder` and waits for it.
    public static func run(_ executable: URL, _ arguments: [String], in folder: URL) throws -> Outcome {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = folder
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: String(decoding: output, as: UTF8.self),
                       errors: String(decoding: errors, as: UTF8.self))
    }
}
