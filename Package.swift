// swift-tools-version: 6.1
import PackageDescription

// The module map and the C boundary: docs/ARCHITECTURE.md §5 (stated there only).
// Each target declares every product it imports.

// The test seams exist in debug builds only (`make test`, `make chaos`); a release build (the image, the bench) has
// none: docs/ARCHITECTURE.md §3, "Test seams".
let testSeams: [SwiftSetting] = [.define("AVATAR_TEST_SEAMS", .when(configuration: .debug))]
let package = Package(
    name: "avatar-cropper",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "avatar-cropper", targets: ["avatar-cropper"]),
        .library(name: "CropGeometry", targets: ["CropGeometry"]),
        // For the benchmarks' package (bench/Package.swift), which depends on this one by path: `avatar-bench`
        // renders with them, through their `@_spi(Benchmark)` hooks too.
        .library(name: "Imaging", targets: ["Imaging"]),
        .library(name: "RenderHelpers", targets: ["RenderHelpers"]),
    ],
    // Exact versions (Package.resolved is not committed): a rebuild of the same commit gets the same code.
    // To upgrade, change a version here and run every suite.
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-protobuf", exact: "1.39.0"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", exact: "2.0.1"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
        .package(url: "https://github.com/jpsim/Yams", exact: "5.0.1"),
        .package(url: "https://github.com/apple/swift-configuration", exact: "1.4.0"),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        // async-http-client's TLS; named here only so Storage can tell a refused certificate from an outage.
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        // Traces (docs/ARCHITECTURE.md, Telemetry): the API, and swift-otel's OTLP/HTTP exporter only (no gRPC).
        .package(url: "https://github.com/apple/swift-distributed-tracing", exact: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel", exact: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // MARK: C libraries (system packages) and the libvips shim
        .systemLibrary(
            name: "Cvips",
            path: "Sources/C/Cvips",
            pkgConfig: "vips",
            providers: [.apt(["libvips-dev"])]
        ),
        // GModule (libglib2.0-dev, which libvips-dev pulls in): the helpers load libvips' HEIF module alone.
        .target(
            name: "CvipsShim",
            dependencies: ["Cvips"],
            path: "Sources/C/CvipsShim",
            linkerSettings: [.linkedLibrary("gmodule-2.0")]
        ),
        // libjpeg(-turbo)'s region-of-interest decode for Imaging (libjpeg62-turbo-dev on Debian).
        .target(
            name: "CJPEGRegion",
            path: "Sources/C/CJPEGRegion",
            linkerSettings: [.linkedLibrary("jpeg")]
        ),
        // libheif's tile-by-tile decode of a HEIF/AVIF region for Imaging (libheif-dev ≥ 1.19).
        .target(
            name: "CHEIFRegion",
            path: "Sources/C/CHEIFRegion",
            linkerSettings: [.linkedLibrary("heif")]
        ),
        // libheif's AV1 encoder (the aom plugin) writing Imaging's AVIF avatars (libheif-dev ≥ 1.19).
        .target(
            name: "CAVIFEncoder",
            path: "Sources/C/CAVIFEncoder",
            linkerSettings: [.linkedLibrary("heif")]
        ),
        // libwebp's encoder and mux writing Imaging's WebP avatars (libwebp-dev).
        .target(
            name: "CWebPEncoder",
            path: "Sources/C/CWebPEncoder",
            linkerSettings: [.linkedLibrary("webp"), .linkedLibrary("webpmux")]
        ),
        // libdeflate's zlib compressor and CRC-32 for Imaging's PNG writer.
        .systemLibrary(
            name: "Cdeflate",
            path: "Sources/C/Cdeflate",
            pkgConfig: "libdeflate",
            providers: [.apt(["libdeflate-dev"])]
        ),
        // Little CMS, for Imaging's cached ICC transforms (libvips links it too).
        .systemLibrary(
            name: "Clcms2",
            path: "Sources/C/Clcms2",
            pkgConfig: "lcms2",
            providers: [.apt(["liblcms2-dev"])]
        ),
        // The face detector for Imaging: YuNet over OpenCV 4.6's dnn module (libopencv-dnn-dev, libopencv-imgproc-dev).
        .target(
            name: "CFaceDetect",
            path: "Sources/C/CFaceDetect",
            cxxSettings: [.unsafeFlags(["-I/usr/include/opencv4"])],
            linkerSettings: [
                .linkedLibrary("opencv_dnn"), .linkedLibrary("opencv_imgproc"), .linkedLibrary("opencv_core"),
            ]
        ),
        // posix_spawn with closefrom, memfd_create, SCM_RIGHTS and prlimit for RenderHelpers (glibc ≥ 2.34).
        .target(
            name: "CHelperProcess",
            path: "Sources/C/CHelperProcess"
        ),
        // The render helper's kernel lockdown (libseccomp, libseccomp-dev on Debian) for Sandbox.
        .target(
            name: "CSandbox",
            path: "Sources/C/CSandbox",
            linkerSettings: [.linkedLibrary("seccomp")]
        ),
        .systemLibrary(
            name: "Crdkafka",
            path: "Sources/C/Crdkafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),
        .systemLibrary(
            name: "Clibpq",
            path: "Sources/C/Clibpq",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),

        // MARK: Swift modules
        .target(name: "CropGeometry"),
        .target(
            name: "Imaging",
            dependencies: [
                "CropGeometry", "Cvips", "CvipsShim", "CJPEGRegion", "CHEIFRegion", "CAVIFEncoder", "CWebPEncoder",
                "Cdeflate", "Clcms2", "CFaceDetect",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: testSeams
        ),
        .target(name: "Sandbox", dependencies: ["CSandbox"]),
        // Renders in helper processes (docs/ARCHITECTURE.md §3, "Render helpers"): the pool, the channel, the helper.
        .target(
            name: "RenderHelpers",
            dependencies: [
                "CropGeometry", "Imaging", "Sandbox", "CHelperProcess", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: testSeams
        ),
        .target(
            name: "Messaging",
            dependencies: [
                "Crdkafka",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "Database",
            dependencies: [
                "Clibpq",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "Storage",
            dependencies: [
                "CropGeometry",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CropProtocol",
            dependencies: [
                "CropGeometry",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        .target(
            name: "AvatarWorker",
            dependencies: [
                "CropGeometry", "Imaging", "RenderHelpers", "Sandbox", "Messaging", "Database", "Storage",
                "CropProtocol",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
            ],
            swiftSettings: testSeams
        ),
        .executableTarget(
            name: "avatar-cropper",
            dependencies: [
                "AvatarWorker", "Imaging", "RenderHelpers", "CropGeometry", "CropProtocol", "Messaging", "Database",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: testSeams
        ),

        // MARK: Tests (unit tests need no services; integration tests find theirs by environment)
        // The services gate (`.requires(.database, ...)`, AVATAR_REQUIRE_SERVICES), the AVATAR_TEST_*
        // variables, tools on PATH and the photo sets, read in this one place for every test target.
        .target(name: "TestEnvironment", path: "Tests/TestEnvironment"),
        .testTarget(
            name: "CropGeometryTests",
            dependencies: [
                "CropGeometry", "TestEnvironment", .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "ImagingTests",
            dependencies: [
                "Imaging", "CropGeometry", "Cvips", "TestEnvironment", .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // librdkafka's mock cluster for MessagingTests (fault injection without a broker).
        .target(
            name: "MessagingTestSupport",
            dependencies: ["Messaging", "Crdkafka", .product(name: "Logging", package: "swift-log")],
            path: "Tests/MessagingTestSupport"
        ),
        .testTarget(
            name: "MessagingTests",
            dependencies: [
                "Messaging", "MessagingTestSupport", "TestEnvironment",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(name: "SandboxTests", dependencies: ["Sandbox"]),
        .testTarget(
            name: "DatabaseTests",
            dependencies: ["Database", "TestEnvironment", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "StorageTests",
            dependencies: [
                "Storage", "CropGeometry", "TestEnvironment", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "CropProtocolTests",
            dependencies: [
                "CropProtocol", "CropGeometry", "TestEnvironment",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        // The helper pool against the built `avatar-cropper` (its helpers are that binary).
        .testTarget(
            name: "RenderHelpersTests",
            dependencies: ["RenderHelpers", "Imaging", "CropGeometry", "TestEnvironment", "avatar-cropper"]
        ),
        .testTarget(
            name: "AvatarWorkerTests",
            dependencies: [
                "AvatarWorker", "CropGeometry", "Imaging", "RenderHelpers", "Messaging", "Database", "Storage",
                "CropProtocol",
                "TestEnvironment",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            exclude: ["python"]
        ),
        .testTarget(name: "CLITests", dependencies: ["avatar-cropper", "TestEnvironment"]),
        .testTarget(
            name: "DeployTests",
            dependencies: ["AvatarWorker", "TestEnvironment", .product(name: "Yams", package: "Yams")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
