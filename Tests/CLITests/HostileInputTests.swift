import Foundation
import Testing

/// Issue "nothing a user uploads can stall a worker": every hostile file gets a clear answer from the
/// built binary. A hang (the truncated SVGZ used to spin in libvips' format sniffing forever) is caught
/// by a guard far above the milliseconds an answer takes; this is a liveness check, not a timing.
@Suite("avatar-cropper crop on hostile files")
struct HostileInputTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/hostile")

    static let expected: [String: String] = [
        "svgz_truncated.svgz": "unsupported_format",
        "avif_declares-17000x17000.avif": "too_many_pixels",
        "png_header-only-bomb_65535x65535.png": "too_many_pixels",
        "html_404-named.jpg": "unsupported_format",
        "zero-byte.jpg": "unsupported_format",
    ]

    static var files: [String] {
        var paths = expected.keys.sorted().map { fixtures.appendingPathComponent($0).path }
        // The larger corpus' bad/ folder, when it is there (AVATAR_TEST_CORPUS).
        if let corpus = ProcessInfo.processInfo.environment["AVATAR_TEST_CORPUS"],
            let names = try? FileManager.default.contentsOfDirectory(atPath: corpus + "/bad")
        {
            paths += names.sorted().map { corpus + "/bad/" + $0 }
        }
        return paths
    }

    @Test("each answers with a typed error (or renders), well within the hang guard", arguments: files)
    func answers(path: String) throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let run = try CLI.run(
            ["crop", path, "-o", directory.appendingPathComponent("o.png").path, "--json"], hangGuard: .seconds(20))
        let name = URL(fileURLWithPath: path).lastPathComponent
        #expect(!run.timedOut, "\(name) did not answer: a hang")
        guard !run.timedOut else { return }
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        let code = (object?["error"] as? [String: Any])?["code"] as? String
        if let expected = Self.expected[name] {
            #expect(code == expected, "\(name): \(run.stdout)")
        }
        // Nothing hostile may look transient: a replay would send it back again and again.
        #expect(code != "out_of_memory" && code != "processing_failed", "\(name): \(run.stdout)")
    }
}
