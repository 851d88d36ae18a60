import CropGeometry
import CropProtocol
import Foundation
import SwiftProtobuf
import TestEnvironment
import Testing

/// Paths and helpers the tests use; the tools (`TestService.python`, `.tool("protoc")`) come from TestEnvironment.
enum TestSupport {
    static let protoDir = TestFiles.url("proto")
    static let descriptorSetURL = protoDir.appendingPathComponent("descriptor_set.pb")

    static func committedDescriptorSet() throws -> Google_Protobuf_FileDescriptorSet {
        let data = try Data(contentsOf: descriptorSetURL)
        return try Google_Protobuf_FileDescriptorSet(serializedBytes: [UInt8](data))
    }

    /// The .proto files of the schema, relative to proto/, sorted (as scripts/dev/generate-proto.sh passes them).
    static func protoFiles() throws -> [String] {
        let base = protoDir.appendingPathComponent("avatar")
        guard let walker = FileManager.default.enumerator(atPath: base.path) else { return [] }
        return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".proto") }.map { "avatar/\($0)" }.sorted()
    }

    struct ProcessResult {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ executable: String, _ arguments: [String], in directory: URL? = nil) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        var env = ProcessInfo.processInfo.environment
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        process.environment = env
        // Output goes to temp files: no pipe can fill up and block the child.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("crop-proto-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outURL = scratch.appendingPathComponent("stdout")
        let errURL = scratch.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        defer {
            try? out.close()
            try? err.close()
        }
        process.standardOutput = out
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        return ProcessResult(
            status: process.terminationStatus,
            stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

    static func hexBytes(_ text: String) throws -> [UInt8] {
        let digits = Array(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        try #require(digits.count % 2 == 0, "odd number of hex digits")
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            let pair = String(decoding: digits[index...index + 1], as: UTF8.self)
            bytes.append(try #require(UInt8(pair, radix: 16), "not hex: \(pair)"))
        }
        return bytes
    }

    static let userID = UUID(uuidString: "8f14e45f-ceea-467a-9575-6b2c3f1a9e11")!

    /// A minimal valid request message.
    static func minimalRequest() -> Avatar_Crop_V1_CropRequest {
        var message = Avatar_Crop_V1_CropRequest()
        message.jobID = "job-1"
        message.userID = "8F14E45F-CEEA-467A-9575-6B2C3F1A9E11"
        message.sourceKey = "uploads/8f14e45f/original.heic"
        message.requestedAt = Google_Protobuf_Timestamp(seconds: 1_700_000_000, nanos: 250_000_000)
        return message
    }
}
