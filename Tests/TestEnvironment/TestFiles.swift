import Foundation

/// Where the tests find the repository's files and the test photos: `Tests/Fixtures` (in the
/// repository, origins in its SOURCES.md) and, when `AVATAR_TEST_CORPUS` names a directory that holds
/// a SOURCES.md, the larger corpus with the same layout.
public enum TestFiles {
    /// The repository root, found from this file (Tests/TestEnvironment/TestFiles.swift).
    public static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Tests/Fixtures.
    public static let fixtures = repositoryRoot.appendingPathComponent("Tests/Fixtures", isDirectory: true)

    /// The larger corpus, when `AVATAR_TEST_CORPUS` names one that is present.
    public static let corpus: URL? = {
        guard let path = TestService.environment("AVATAR_TEST_CORPUS") else { return nil }
        let url = URL(fileURLWithPath: path, isDirectory: true)
        return FileManager.default.fileExists(atPath: url.appendingPathComponent("SOURCES.md").path) ? url : nil
    }()

    /// The photo sets present, fixtures first.
    public static var photoRoots: [URL] { [fixtures] + (corpus.map { [$0] } ?? []) }

    /// The built `avatar-cropper` executable: next to the test bundle in the products directory (override with
    /// AVATAR_CROPPER_BINARY). The CLI tests run it; in-process test workers start their render helpers from it.
    public static let cropperBinary: URL? = {
        if let path = TestService.environment("AVATAR_CROPPER_BINARY") {
            return URL(fileURLWithPath: path)
        }
        var directory = Bundle.main.bundleURL
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("avatar-cropper")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            let candidate = bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("avatar-cropper")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }()

    /// `cropperBinary`'s path, or an error naming what to build.
    public static func requireCropperBinary() throws -> String {
        guard let binary = cropperBinary else {
            throw TestSetupError("the avatar-cropper executable is not built (swift build, or AVATAR_CROPPER_BINARY)")
        }
        return binary.path
    }

    /// A file of the repository by its relative path.
    public static func url(_ relativePath: String) -> URL { repositoryRoot.appendingPathComponent(relativePath) }
}
