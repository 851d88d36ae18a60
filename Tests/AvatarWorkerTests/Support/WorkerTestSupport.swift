import AvatarWorker
import Database
import Foundation
import TestEnvironment
import Testing

/// The worker tests' helpers; their services come from `TestEnvironment` (`TestService`).
enum WorkerTestSupport {
    /// The first of `paths` that a photo set holds (tests that prefer a large photo from the corpus
    /// name it first and a fixture after it).
    static func photo(_ paths: [String]) throws -> URL {
        for path in paths {
            for root in TestFiles.photoRoots
            where FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path) {
                return root.appendingPathComponent(path)
            }
        }
        Issue.record("no test photo among \(paths)")
        throw MissingService(service: "a test photo among \(paths)")
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
        return TestFiles.url(".build/debug/avatar-cropper")
    }

    /// A configuration of the test database carrying `TestService.tombstoneKey`, as every worker connection does.
    static func database(_ url: String, schema: String? = nil) throws -> DatabaseConfiguration {
        var configuration = DatabaseConfiguration(url: url, searchPath: schema)
        try TombstoneKey.apply(TestService.tombstoneKey, to: &configuration)
        return configuration
    }

    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
    }
}
