import Foundation
import TestEnvironment
import Testing

/// Issue "nothing a user uploads can stall a worker": every hostile file gets a clear answer from the
/// built binary. A hang (the truncated SVGZ used to spin in libvips' format sniffing forever) is caught
/// by a guard far above the milliseconds an answer takes; this is a liveness check, not a timing.
@Suite("avatar-cropper crop on hostile files")
struct HostileInputTests {
    static let fixtures = TestFiles.fixtures.appendingPathComponent("hostile")

    static let expected: [String: String] = [
        "svgz_truncated.svgz": "unsupported_format",
        "avif_declares-17000x17000.avif": "too_many_pixels",
        // Used to crash the process: width × height of the declared size overflowed Int.
        "avif_ispe-overflow_4294967295x4294967295.avif": "too_many_pixels",
        "avif_ipma-entry-count-past-end.avif": "decode_failed",
        "png_header-only-bomb_65535x65535.png": "too_many_pixels",
        "gif_header-only-bomb_65535x65535.gif": "too_many_pixels",
        "jpeg_header-only-bomb_65500x65500.jpg": "too_many_pixels",
        "webp_header-only-bomb_16384x16384.webp": "too_many_pixels",
        "html_404-named.jpg": "unsupported_format",
        "zero-byte.jpg": "unsupported_format",
        "jpeg_progressive-253-scans.jpg": "too_many_scans",
        // Used to crash the process inside libheif's tile API (docs/UPSTREAM-BUGS.md).
        "heic_grid-tile-not-an-image.heic": "decode_failed",
    ]

    static var files: [String] {
        var paths = expected.keys.sorted().map { fixtures.appendingPathComponent($0).path }
        // The larger corpus' bad/ folder, when AVATAR_TEST_CORPUS names it.
        if let corpus = TestFiles.corpus?.path,
            let names = try? FileManager.default.contentsOfDirectory(atPath: corpus + "/bad")
        {
            paths += names.filter { !$0.hasPrefix(".") }.sorted().map { corpus + "/bad/" + $0 }
        }
        return paths
    }

    @Test("every fixture has an expected answer")
    func everyFixtureListed() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.fixtures.path)
            .filter { !$0.hasPrefix(".") && $0 != "SOURCES.md" }
        #expect(names.sorted() == Self.expected.keys.sorted())
    }

    @Test("each answers with a typed error (or renders), well within the hang guard", arguments: files)
    func answers(path: String) throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let run = try CLI.run(
            ["crop", path, "-o", directory.appendingPathComponent("o.png").path, "--json"], hangGuard: .seconds(10))
        let name = URL(fileURLWithPath: path).lastPathComponent
        #expect(!run.timedOut, "\(name) did not answer: a hang")
        guard !run.timedOut else { return }
        // A signal is a crash (a trap in Swift or a C library), not an answer.
        let crashed = run.signalled
        #expect(!crashed, "\(name) crashed (signal \(run.status)): \(run.stderr.prefix(400))")
        guard !crashed else { return }
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        let code = (object?["error"] as? [String: Any])?["code"] as? String
        if let expected = Self.expected[name] {
            #expect(code == expected, "\(name): \(run.stdout)")
        }
        // Nothing hostile may look transient: a replay would send it back again and again.
        #expect(code != "out_of_memory" && code != "processing_failed", "\(name): \(run.stdout)")
    }
}
