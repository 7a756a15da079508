// swift-tools-version: 6.0
//
// Converge: a conflict-aware replicated key-value store with CRDT merging.
// No package dependencies: only the Swift toolchain's own modules and system C
// libraries through system-library targets (SQLite; libcrypto for the hub's token
// hashes; libpq for the hub's PostgreSQL storage). That is a project requirement, not an accident.

import PackageDescription

let package = Package(
    name: "Converge",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Converge", targets: ["Converge"]),
        .library(name: "ConvergeSimulation", targets: ["ConvergeSimulation"]),
        .library(name: "ConvergeSQLite", targets: ["ConvergeSQLite"]),
        .library(name: "ConvergeSharedFolder", targets: ["ConvergeSharedFolder"]),
        .executable(name: "converge-sim", targets: ["converge-sim"]),
        .executable(name: "converge-bench", targets: ["converge-bench"]),
        .executable(name: "converge", targets: ["converge"]),
        .library(name: "ConvergeHub", targets: ["ConvergeHub"]),
        .executable(name: "converge-hub", targets: ["converge-hub"]),
        .library(name: "ConvergeHubClient", targets: ["ConvergeHubClient"]),
    ],
    targets: [
        .target(name: "Converge"),
        .target(name: "ConvergeSimulation", dependencies: ["Converge", "ConvergeSharedFolder"]),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        .target(name: "ConvergeSQLite", dependencies: ["Converge", "CSQLite"]),
        .target(name: "ConvergeSharedFolder", dependencies: ["Converge"]),
        .executableTarget(name: "converge", dependencies: ["Converge", "ConvergeSQLite", "ConvergeSharedFolder", "ConvergeHubClient"]),
        .systemLibrary(name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"]), .brew(["openssl"])]),
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        .target(name: "ConvergeHub", dependencies: ["Converge", "ConvergeSQLite", "CSQLite", "CCrypto", "CLibPQ"]),
        .executableTarget(name: "converge-hub", dependencies: ["ConvergeHub"]),
        // The client of converge-hub: an HTTP transport (URLSession) and automatic sync.
        .target(name: "ConvergeHubClient", dependencies: ["Converge"]),
        .executableTarget(name: "converge-sim", dependencies: ["ConvergeSimulation"]),
        .executableTarget(
            name: "converge-bench", dependencies: ["Converge", "ConvergeSimulation", "ConvergeSQLite", "CSQLite"],
            path: "Benchmarks/converge-bench"
        ),
        // The fuzz targets of Fuzz/run (libFuzzer), which also replay the corpus (not a product).
        .executableTarget(name: "converge-fuzz", dependencies: ["Converge", "ConvergeSharedFolder", "ConvergeSimulation"],
                          path: "Fuzz/converge-fuzz"),
        // The load generator of Benchmarks/hub-load.sh (not a product).
        .executableTarget(name: "converge-hub-load", dependencies: ["Converge", "ConvergeHub"], path: "Benchmarks/converge-hub-load"),
        .target(
            name: "ConvergeTestSupport",
            dependencies: ["Converge", "ConvergeSharedFolder", "ConvergeSimulation"],
            path: "Tests/ConvergeTestSupport"
        ),
        .testTarget(name: "ConvergeTests", dependencies: ["Converge", "ConvergeTestSupport"]),
        .testTarget(
            name: "ConvergeSimulationTests",
            dependencies: ["ConvergeSimulation", "ConvergeTestSupport", "converge-sim", "converge-fuzz"],
            // Shrunk traces of runs that found bugs, read by path (SimulationRegressionTests).
            exclude: ["Traces"]
        ),
        .testTarget(name: "ConvergeSharedFolderTests", dependencies: ["Converge", "ConvergeSharedFolder", "ConvergeTestSupport"]),
        // Test-only: the writer the kill -9 crash test kills (not a product).
        .executableTarget(name: "converge-stress-writer", dependencies: ["Converge", "ConvergeSQLite"],
                          path: "Tests/converge-stress-writer"),
        .testTarget(
            name: "ConvergeSQLiteTests",
            dependencies: ["Converge", "ConvergeSQLite", "ConvergeSimulation", "ConvergeTestSupport", "converge",
                           "converge-stress-writer"]
        ),
        .testTarget(
            name: "ConvergeHubTests",
            dependencies: ["Converge", "ConvergeHub", "ConvergeHubClient", "ConvergeSQLite", "ConvergeSimulation", "ConvergeTestSupport",
                           "converge-hub", "converge"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
