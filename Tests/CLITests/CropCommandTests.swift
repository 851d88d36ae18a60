import Foundation
import TestEnvironment
import Testing

/// Runs the built `avatar-cropper` binary end to end, on the repository's test photos (Tests/Fixtures).
@Suite("avatar-cropper crop")
struct CropCommandTests {
    @Test("success with --json: one object with the documented keys, files written")
    func success() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("avatar.png")
        let run = try CLI.run([
            "crop", CLI.corpus("orientation/Landscape_6.jpg"), "-o", output.path, "--json", "--extra-size", "80",
            "--blurhash",
        ])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let keys = [
            "source_width", "source_height", "decode_width", "decode_height", "crop_x", "crop_y", "crop_side",
            "s_min", "s_max", "scale_requested", "scale_applied", "zoom_clamped", "quality_limited", "pan_clamped",
            "density", "fallback_used", "decoder", "output_bytes", "timings_ms", "blurhash", "extras",
        ]
        for key in keys { #expect(object[key] != nil, "missing \(key)") }
        // Stored 900×1350 with EXIF orientation 6: the source is reported upright.
        #expect(object["source_width"] as? Int == 1350)
        #expect(object["source_height"] as? Int == 900)
        #expect(object["crop_side"] as? Int == 900)
        #expect(object["fallback_used"] as? Bool == false)
        // A baseline JPEG: only the crop's region was decoded.
        #expect(object["decoder"] as? String == "jpeg-region")
        #expect(object["scale_requested"] is NSNull)
        let timings = try #require(object["timings_ms"] as? [String: Any])
        #expect(timings["render"] != nil && timings["encode"] != nil && timings["total"] != nil)
        #expect((object["blurhash"] as? String)?.count == 28)

        let written = try Data(contentsOf: output)
        #expect(written.count == object["output_bytes"] as? Int)
        #expect(written.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        let extra = directory.appendingPathComponent("avatar_80.png")
        #expect(FileManager.default.fileExists(atPath: extra.path))
        // Only the outputs remain: the atomic write left no temporary file.
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(names == ["avatar.png", "avatar_80.png"])
    }

    @Test("a pose with clamps and JPEG output")
    func pose() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("avatar.jpg")
        let run = try CLI.run([
            "crop", CLI.corpus("orientation/Landscape_1.jpg"), "-o", output.path, "--json", "--scale", "100",
            "--tx", "-4000", "--ty", "0",
        ])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(object["zoom_clamped"] as? Bool == true)
        #expect(object["scale_requested"] as? Double == 100)
        // A negative offset parses as a value, and one that far out is pulled back in.
        #expect(object["pan_clamped"] as? Bool == true)
        let written = try Data(contentsOf: output)
        #expect(written.starts(with: [0xFF, 0xD8]))
    }

    @Test("too small: non-zero exit and the error as JSON")
    func tooSmallJSON() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("avatar.png")
        let run = try CLI.run(["crop", CLI.corpus("size/craft-beer_319x479.jpg"), "-o", output.path, "--json"])
        #expect(run.status == 14)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let error = try #require(object["error"] as? [String: Any])
        #expect(error["code"] as? String == "too_small")
        #expect(error["message"] as? String == "This photo is too small for a profile picture")
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }

    @Test("without --json the message goes to stderr; exit codes differ per error class")
    func plainErrors() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("avatar.png").path
        let small = try CLI.run(["crop", CLI.corpus("size/craft-beer_319x479.jpg"), "-o", output])
        #expect(small.status == 14)
        #expect(small.stderr.contains("This photo is too small for a profile picture"))
        #expect(small.stdout.isEmpty)
        // A failed fetch saved as the photo, and a JPEG cut off at a third of its bytes.
        let htmlFile = directory.appendingPathComponent("not-an-image.jpg")
        try Data("<html><body><h1>404 Not Found</h1></body></html>\n".utf8).write(to: htmlFile)
        let html = try CLI.run(["crop", htmlFile.path, "-o", output])
        #expect(html.status == 10)
        let photo = try Data(contentsOf: URL(fileURLWithPath: CLI.corpus("orientation/Landscape_1.jpg")))
        let truncatedFile = directory.appendingPathComponent("truncated.jpg")
        try photo.prefix(photo.count / 3).write(to: truncatedFile)
        let truncated = try CLI.run(["crop", truncatedFile.path, "-o", output])
        #expect(truncated.status == 11)
        let missing = try CLI.run(["crop", directory.appendingPathComponent("nope.jpg").path, "-o", output])
        #expect(missing.status == 30)
        let usage = try CLI.run(["crop", CLI.corpus("orientation/Landscape_1.jpg"), "-o", output, "--tx", "3"])
        #expect(usage.status == 64)
    }
}

enum CLI {
    /// The built executable: next to the test bundle in the products directory (override with
    /// AVATAR_CROPPER_BINARY).
    static let binary: URL? = TestFiles.cropperBinary

    /// Tests/Fixtures.
    static let fixtures = TestFiles.fixtures.path

    static func corpus(_ path: String) -> String { fixtures + "/" + path }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cli-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        /// The process was still running at the hang guard and was killed.
        var timedOut = false
        /// The process ended on a signal (a crash, or the hang guard's kill), not an exit code.
        var signalled = false
    }

    /// Runs the binary to completion; past `hangGuard` it is killed and the run says `timedOut`.
    /// `environment` replaces the inherited one when given.
    static func run(
        _ arguments: [String], hangGuard: Duration? = nil, environment: [String: String]? = nil
    ) throws -> Run {
        let process = Process()
        guard let binary else { throw CocoaError(.fileNoSuchFile) }
        process.executableURL = binary
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let killed = KilledFlag()
        if let hangGuard {
            let seconds = Double(hangGuard.components.seconds)
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [process] in
                if process.isRunning {
                    killed.set()
                    process.terminate()
                }
            }
        }
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self), timedOut: killed.value,
            signalled: process.terminationReason == .uncaughtSignal)
    }
}

/// Set once from the hang guard's queue, read after the process exited.
private final class KilledFlag: @unchecked Sendable {
    // @unchecked Sendable: every access holds `lock`.
    private let lock = NSLock()
    private var killed = false
    func set() { lock.withLock { killed = true } }
    var value: Bool { lock.withLock { killed } }
}
