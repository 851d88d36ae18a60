// swift-tools-version: 6.1
import PackageDescription

// The benchmarks' Swift side, `avatar-bench` (bench/README.md): a package of its own, so that `swift build` of the
// product builds the product only. It depends on the product's package by path, as swift-kafka-client keeps its
// benchmarks, and renders through the library products that package exports for it (`Imaging`, `RenderHelpers`,
// `CropGeometry`), their `@_spi(Benchmark)` hooks included. Built in release by the bench scripts:
// `swift build --package-path bench -c release`.
let package = Package(
    name: "avatar-cropper-bench",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "avatar-cropper", path: ".."),
        // The product's own pin (Package.swift): one version of swift-log in the graph.
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "avatar-bench",
            dependencies: [
                .product(name: "Imaging", package: "avatar-cropper"),
                .product(name: "RenderHelpers", package: "avatar-cropper"),
                .product(name: "CropGeometry", package: "avatar-cropper"),
                .product(name: "Logging", package: "swift-log"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
