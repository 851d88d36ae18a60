import Foundation
import Testing

/// Where the integration tests find their services: only through `AVATAR_TEST_*`
/// variables (`make test` starts the services and sets them). Without them the tests
/// are skipped, unless `AVATAR_REQUIRE_SERVICES=1`, where they run and fail loudly.
enum TestServices {
    static let environment = ProcessInfo.processInfo.environment

    static var required: Bool { environment["AVATAR_REQUIRE_SERVICES"] == "1" }

    static var databaseURL: String? { environment["AVATAR_TEST_DATABASE_URL"] }
    static var kafkaBrokers: String? { environment["AVATAR_TEST_KAFKA_BROKERS"] }
    static var s3Endpoint: String? { environment["AVATAR_TEST_S3_ENDPOINT"] }
    static var python: String? { environment["AVATAR_TEST_PYTHON"] }

    /// Postgres and the broker, the minimum a worker test needs.
    static var workerServices: Bool { required || (databaseURL != nil && kafkaBrokers != nil) }

    static func require(_ value: String?, _ name: String) throws -> String {
        guard let value, !value.isEmpty else {
            Issue.record("\(name) is not set: run the integration tests through `make test`")
            throw MissingService(name: name)
        }
        return value
    }

    struct MissingService: Error { let name: String }

    /// The repository root (for migrations/ and proto/).
    static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The test photos: Tests/Fixtures, then the larger corpus when `AVATAR_TEST_CORPUS` names one
    /// that is present. Both use the same relative paths.
    static var photoRoots: [URL] {
        let fixtures = repositoryRoot.appendingPathComponent("Tests/Fixtures")
        guard let path = environment["AVATAR_TEST_CORPUS"], !path.isEmpty,
            FileManager.default.fileExists(atPath: URL(fileURLWithPath: path).appendingPathComponent("SOURCES.md").path)
        else { return [fixtures] }
        return [fixtures, URL(fileURLWithPath: path)]
    }

    /// The first of `paths` that a photo set holds (tests that prefer a large photo from the corpus
    /// name it first and a fixture after it).
    static func photo(_ paths: [String]) throws -> URL {
        for path in paths {
            for root in photoRoots where FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path)
            {
                return root.appendingPathComponent(path)
            }
        }
        Issue.record("no test photo among \(paths)")
        throw MissingService(name: "test photo")
    }

    /// The built `avatar-cropper` executable, next to the test bundle.
    static var executable: URL {
        var directory = Bundle.main.bundleURL
        if directory.pathExtension != "xctest" {
            directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        }
        var candidate = directory
        while candidate.path != "/" {
            let binary = candidate.appendingPathComponent("avatar-cropper")
            if FileManager.default.isExecutableFile(atPath: binary.path) { return binary }
            candidate = candidate.deletingLastPathComponent()
        }
        return repositoryRoot.appendingPathComponent(".build/debug/avatar-cropper")
    }

    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
    }
}
