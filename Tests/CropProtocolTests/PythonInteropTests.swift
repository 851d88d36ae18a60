import CropGeometry
import CropProtocol
import Foundation
import SwiftProtobuf
import TestEnvironment
import Testing

/// A producer written in Python (proto/examples/crop_request.py, using the committed generated
/// classes in proto/python) builds requests that the Swift side decodes. Runs when
/// AVATAR_TEST_PYTHON names an interpreter with the `protobuf` package; with
/// AVATAR_REQUIRE_SERVICES=1 a missing interpreter is a failure.
@Suite("Python interoperability", .requires(.python))
struct PythonInteropTests {
    private static let script = TestSupport.protoDir.appendingPathComponent("examples/crop_request.py").path

    private func runScript(_ arguments: [String]) throws -> String {
        let python = try TestService.python.require()
        let run = try TestSupport.run(python, [Self.script] + arguments)
        try #require(run.status == 0, "crop_request.py failed: \(run.stderr)")
        return run.stdout
    }

    @Test func poseRequestFromPythonDecodesAndValidates() throws {
        let hex = try runScript([
            "--job-id", "py-job:1", "--user-id", "8F14E45F-CEEA-467A-9575-6B2C3F1A9E11",
            "--source-key", "uploads/8f14e45f/IMG_0001.HEIC", "--pose", "1.75,-20.5,12,300,2",
            "--reference", "1170x1560", "--size", "640", "--jpeg", "--quality", "80", "--extra", "80",
            "--extra", "80", "--blurhash", "--background", "#336699", "--requested-at", "1712345678.5",
        ])
        let request = try CropCodec.validatedRequest(TestSupport.hexBytes(hex), contentType: "application/x-protobuf")
        #expect(request.jobID == "py-job:1")
        #expect(request.userID == TestSupport.userID)
        #expect(request.sourceKey == "uploads/8f14e45f/IMG_0001.HEIC")
        #expect(
            request.input
                == .pose(
                    EditorPose(scale: 1.75, tx: -20.5, ty: 12), reference: PixelSize(width: 1170, height: 1560)))
        #expect(request.editorSettings == EditorSettings(screenScale: 2, maskDiameter: 300, outputSize: 640))
        #expect(request.outputSize == 640)
        #expect(request.formats == [.jpeg])
        #expect(request.quality == 80)
        #expect(request.extraSizes == [80])
        #expect(request.wantBlurHash)
        #expect(request.background == RGBColor(r: 0x33, g: 0x66, b: 0x99))
        #expect(request.requestedAt == Date(timeIntervalSince1970: 1_712_345_678.5))
    }

    @Test func rectRequestFromPythonInJSONDecodesAndValidates() throws {
        let json = try runScript([
            "--job-id", "py-job-2", "--user-id", "8f14e45f-ceea-467a-9575-6b2c3f1a9e11", "--source-key", "u/x.png",
            "--rect", "10,20,300", "--reference", "640x480", "--requested-at", "1712345678", "--json",
        ])
        let request = try CropCodec.validatedRequest(Array(json.utf8), contentType: "application/json")
        let reference = PixelSize(width: 640, height: 480)
        #expect(request.input == .rect(PixelRect(x: 10, y: 20, side: 300), reference: reference))
        #expect(request.formats == nil)
        #expect(request.outputSize == 512)
        #expect(request.quality == 90)
    }

    @Test func invalidIDsFromPythonAreRejected() throws {
        let hex = try runScript([
            "--job-id", "../../etc", "--user-id", "8f14e45f-ceea-467a-9575-6b2c3f1a9e11", "--source-key", "u/x.png",
        ])
        #expect(throws: ProtocolError.self) {
            try CropCodec.validatedRequest(TestSupport.hexBytes(hex), contentType: nil)
        }
        let badUser = try TestSupport.hexBytes(
            runScript(["--job-id", "ok", "--user-id", "../x", "--source-key", "u/x.png"]))
        do {
            _ = try CropCodec.validatedRequest(badUser, contentType: nil)
            Issue.record("a non-UUID user id was accepted")
        } catch {
            #expect(error.code == .invalidUserID)
        }
    }

    @Test func committedPythonModulesMatchTheSchema() throws {
        let committed = try TestSupport.committedDescriptorSet()
        let lines = try runScript(["--descriptors"]).split(separator: "\n")
        #expect(lines.count == 4)
        for line in lines {
            let parts = line.split(separator: " ")
            try #require(parts.count == 2)
            let fromPython = try Google_Protobuf_FileDescriptorProto(
                serializedBytes: TestSupport.hexBytes(String(parts[1])))
            let expected = try #require(committed.file.first { $0.name == String(parts[0]) })
            // protoc fills in json_name in descriptor sets but not in what it embeds in Python.
            #expect(
                Self.withoutJSONNames(fromPython) == Self.withoutJSONNames(expected),
                "proto/python is stale for \(parts[0]): run scripts/dev/generate-proto.sh")
        }
    }

    private static func withoutJSONNames(
        _ file: Google_Protobuf_FileDescriptorProto
    ) -> Google_Protobuf_FileDescriptorProto {
        func strip(_ message: inout Google_Protobuf_DescriptorProto) {
            for index in message.field.indices { message.field[index].clearJsonName() }
            for index in message.nestedType.indices { strip(&message.nestedType[index]) }
        }
        var copy = file
        for index in copy.messageType.indices { strip(&copy.messageType[index]) }
        return copy
    }
}
