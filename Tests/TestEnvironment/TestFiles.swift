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

    /// A file of the repository by its relative path.
    public static func url(_ relativePath: String) -> URL { repositoryRoot.appendingPathComponent(relativePath) }
}
