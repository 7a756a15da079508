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

    /// Runs `executable` with `arguments` in `folder` and waits for it.
    ///
    /// - Parameter environment: Variables to set (or, with `nil`, to remove) in the
    ///   child's copy of this process's environment.
    public static func run(_ executable: URL, _ arguments: [String], in folder: URL,
                           environment: [String: String?] = [:]) throws -> Outcome {
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
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: String(decoding: output, as: UTF8.self),
                       errors: String(decoding: errors, as: UTF8.self))
    }
}
