import Foundation
import TestEnvironment
import Testing

/// `crop -o NAME.EXT`: the extension says the format (docs/FORMATS.md); one it cannot write is refused, never bytes of
/// another format under its name.
@Suite("avatar-cropper crop: output formats")
struct CropFormatsTests {
    /// The magic bytes of each format's file: RIFF....WEBP, ....ftypavif, PNG's signature, JPEG's SOI.
    static func format(of data: Data) -> String? {
        let bytes = [UInt8](data.prefix(12))
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "png" }
        if bytes.starts(with: [0xFF, 0xD8]) { return "jpeg" }
        if bytes.count == 12, bytes[0..<4] == Array("RIFF".utf8)[...], bytes[8..<12] == Array("WEBP".utf8)[...] {
            return "webp"
        }
        if bytes.count == 12, bytes[4..<12] == Array("ftypavif".utf8)[...] { return "avif" }
        return nil
    }

    @Test("each extension writes its format, the extra sizes too", arguments: ["webp", "avif", "png", "jpg", "JPEG"])
    func writesTheExtensionsFormat(ext: String) throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("avatar.\(ext)")
        let run = try CLI.run([
            "crop", CLI.corpus("orientation/Landscape_6.jpg"), "-o", output.path, "--extra-size", "64",
            "--default", "centre",
        ])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let expected = ["jpg": "jpeg", "JPEG": "jpeg"][ext] ?? ext
        #expect(Self.format(of: try Data(contentsOf: output)) == expected)
        let extra = directory.appendingPathComponent("avatar_64.\(ext)")
        #expect(Self.format(of: try Data(contentsOf: extra)) == expected)
        #expect(run.stdout.contains("512x512 \(expected)"))
    }

    @Test("an extension no format is written with, or one --format contradicts, is refused and nothing is written")
    func refusesOtherExtensions() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for (name, extra) in [("avatar.gif", [String]()), ("avatar.heic", []), ("avatar.webp", ["--format", "png"])] {
            let output = directory.appendingPathComponent(name)
            let run = try CLI.run(["crop", CLI.corpus("orientation/Landscape_6.jpg"), "-o", output.path] + extra)
            #expect(run.status != 0, "\(name) \(extra)")
            #expect(run.stderr.contains(output.path) || run.stderr.contains("--format"), "\(run.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [])
    }

    @Test("a name without an extension takes --format, else PNG")
    func noExtension() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for (format, expected) in [(nil, "png"), ("webp", "webp")] as [(String?, String)] {
            let output = directory.appendingPathComponent("avatar-\(expected)")
            let run = try CLI.run(
                ["crop", CLI.corpus("orientation/Landscape_6.jpg"), "-o", output.path, "--default", "centre"]
                    + (format.map { ["--format", $0] } ?? []))
            #expect(run.status == 0, "stderr: \(run.stderr)")
            #expect(Self.format(of: try Data(contentsOf: output)) == expected)
        }
    }

    @Test("a missing face model: crop warns on standard error and still writes the centred square")
    func missingFaceModel() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("avatar.png")
        let run = try CLI.run([
            "crop", CLI.corpus("orientation/Landscape_6.jpg"), "-o", output.path, "--default", "face",
            "--face-model", directory.appendingPathComponent("absent.onnx").path,
        ])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("no face detection"), "stderr: \(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: output.path))
    }
}
