// swift-tools-version: 6.0
//
// An example package outside Converge: it depends on Converge by path and compares a merge
// policy of its own with the built-in ones, under a workload of its own, on the same
// simulated histories. Run it from the repository's root:
//   swift run --package-path Examples/PolicyLab policy-lab [SEEDS]
import PackageDescription

let package = Package(
    name: "PolicyLab",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "Converge", path: "../..")],
    targets: [
        .executableTarget(name: "policy-lab", dependencies: [
            .product(name: "Converge", package: "Converge"),
            .product(name: "ConvergeSimulation", package: "Converge"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
