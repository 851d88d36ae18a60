import CropProtocol
import Foundation
import SwiftProtobuf
import TestEnvironment
import Testing

/// Checks on the compiled schema, proto/descriptor_set.pb (written by scripts/dev/generate-proto.sh).
@Suite("Schema")
struct SchemaTests {
    typealias FieldType = Google_Protobuf_FieldDescriptorProto.TypeEnum

    /// Every message in the set by full name (".avatar.crop.v1.CropMetrics.StageLatency").
    private static func messagesByName(
        _ set: Google_Protobuf_FileDescriptorSet
    ) -> [String: Google_Protobuf_DescriptorProto] {
        var table: [String: Google_Protobuf_DescriptorProto] = [:]
        func add(_ message: Google_Protobuf_DescriptorProto, scope: String) {
            let name = "\(scope).\(message.name)"
            table[name] = message
            for nested in message.nestedType { add(nested, scope: name) }
        }
        for file in set.file {
            for message in file.messageType { add(message, scope: file.package.isEmpty ? "" : ".\(file.package)") }
        }
        return table
    }

    /// Paths of the fields that are strings or bytes, at any depth under `root`.
    private static func textualFields(
        under root: String, in set: Google_Protobuf_FileDescriptorSet
    ) throws -> [String] {
        let messages = messagesByName(set)
        var found: [String] = []
        var visited: Set<String> = []
        func walk(_ typeName: String, path: String) throws {
            guard visited.insert(typeName).inserted else { return }
            let message = try #require(messages[typeName], "\(typeName) is not in the descriptor set")
            for field in message.field {
                let fieldPath = "\(path).\(field.name)"
                switch field.type {
                case .string, .bytes:
                    found.append(fieldPath)
                case .message, .group:
                    try walk(field.typeName, path: fieldPath)
                default:
                    break
                }
            }
        }
        try walk(root, path: String(root.split(separator: ".").last ?? ""))
        return found
    }

    @Test func metricsHoldNoStringsOrBytesAtAnyDepth() throws {
        let set = try TestSupport.committedDescriptorSet()
        let metrics = try #require(Self.messagesByName(set)[".avatar.crop.v1.CropMetrics"])
        #expect(metrics.field.count >= 30)
        // The nested messages are walked too (the latency stages, the timestamp).
        #expect(metrics.field.contains { $0.typeName == ".avatar.crop.v1.CropMetrics.StageLatency" })
        #expect(try Self.textualFields(under: ".avatar.crop.v1.CropMetrics", in: set) == [])
    }

    @Test func theWalkerFindsTextualFieldsWhereTheyExist() throws {
        // The check above must be able to fail: requests and results do carry strings,
        // including inside nested messages.
        let set = try TestSupport.committedDescriptorSet()
        let request = try Self.textualFields(under: ".avatar.crop.v1.CropRequest", in: set)
        #expect(
            Set(request) == [
                "CropRequest.job_id", "CropRequest.user_id", "CropRequest.source_key",
                "CropRequest.background",
            ])
        let result = try Self.textualFields(under: ".avatar.crop.v1.CropResult", in: set)
        #expect(result.contains("CropResult.success.renditions.path"))
        #expect(result.contains("CropResult.failure.error_code"))
    }

    @Test func errorCodeNamesAreTheFailureStrings() throws {
        let set = try TestSupport.committedDescriptorSet()
        let common = try #require(set.file.first { $0.name == "avatar/crop/v1/common.proto" })
        let errorCode = try #require(common.enumType.first { $0.name == "ErrorCode" })
        var named: [CropErrorCode] = []
        for value in errorCode.value where value.number != 0 {
            let name = String(value.name.dropFirst("ERROR_CODE_".count))
            let code = try #require(CropErrorCode(rawValue: name), "\(value.name) has no CropErrorCode")
            #expect(code.wireValue.rawValue == Int(value.number))
            named.append(code)
        }
        #expect(Set(named) == Set(CropErrorCode.allCases))
    }

    @Test(.requires(.tool("protoc")))
    func committedDescriptorSetMatchesTheProtoFiles() throws {
        let protoc = try TestService.tool("protoc").require()
        let output = FileManager.default.temporaryDirectory
            .appendingPathComponent("crop-descriptor-\(UUID().uuidString).pb")
        defer { try? FileManager.default.removeItem(at: output) }
        let files = try TestSupport.protoFiles()
        #expect(files.count == 4)
        let run = try TestSupport.run(
            protoc, ["-I", ".", "--descriptor_set_out=\(output.path)", "--include_imports"] + files,
            in: TestSupport.protoDir)
        try #require(run.status == 0, "protoc failed: \(run.stderr)")
        let fresh = try Google_Protobuf_FileDescriptorSet(serializedBytes: [UInt8](Data(contentsOf: output)))
        let committed = try TestSupport.committedDescriptorSet()
        #expect(fresh == committed, "proto/ changed: run scripts/dev/generate-proto.sh and commit the results")
    }

    /// The generated Swift types by full proto name.
    private static let swiftMessages: [String: any SwiftProtobuf.Message.Type] = [
        "avatar.crop.v1.CropRequest": Avatar_Crop_V1_CropRequest.self,
        "avatar.crop.v1.EditorPose": Avatar_Crop_V1_EditorPose.self,
        "avatar.crop.v1.PixelRect": Avatar_Crop_V1_PixelRect.self,
        "avatar.crop.v1.OutputSpec": Avatar_Crop_V1_OutputSpec.self,
        "avatar.crop.v1.CropResult": Avatar_Crop_V1_CropResult.self,
        "avatar.crop.v1.CropResult.Rendition": Avatar_Crop_V1_CropResult.Rendition.self,
        "avatar.crop.v1.CropResult.AppliedCrop": Avatar_Crop_V1_CropResult.AppliedCrop.self,
        "avatar.crop.v1.CropResult.Face": Avatar_Crop_V1_CropResult.Face.self,
        "avatar.crop.v1.CropResult.Success": Avatar_Crop_V1_CropResult.Success.self,
        "avatar.crop.v1.CropResult.Failure": Avatar_Crop_V1_CropResult.Failure.self,
        "avatar.crop.v1.CropMetrics": Avatar_Crop_V1_CropMetrics.self,
        "avatar.crop.v1.CropMetrics.StageLatency": Avatar_Crop_V1_CropMetrics.StageLatency.self,
        "avatar.crop.v1.CropMetrics.FormatEncode": Avatar_Crop_V1_CropMetrics.FormatEncode.self,
    ]

    /// Enum value counts of the generated Swift enums by full proto name.
    private static let swiftEnumCaseCounts: [String: Int] = [
        "avatar.crop.v1.ImageFormat": Avatar_Crop_V1_ImageFormat.allCases.count,
        "avatar.crop.v1.ErrorClass": Avatar_Crop_V1_ErrorClass.allCases.count,
        "avatar.crop.v1.ErrorCode": Avatar_Crop_V1_ErrorCode.allCases.count,
        "avatar.crop.v1.CropResult.Disposition": Avatar_Crop_V1_CropResult.Disposition.allCases.count,
        "avatar.crop.v1.CropMetrics.Outcome": Avatar_Crop_V1_CropMetrics.Outcome.allCases.count,
        "avatar.crop.v1.CropMetrics.Geometry": Avatar_Crop_V1_CropMetrics.Geometry.allCases.count,
        "avatar.crop.v1.CropMetrics.SourceFormat": Avatar_Crop_V1_CropMetrics.SourceFormat.allCases.count,
        "avatar.crop.v1.CropRequest.Kind": Avatar_Crop_V1_CropRequest.Kind.allCases.count,
        "avatar.crop.v1.CropRequest.DefaultCrop": Avatar_Crop_V1_CropRequest.DefaultCrop.allCases.count,
    ]

    /// The committed Swift must have been generated from the committed schema: every message
    /// and enum exists, and every field is known to Swift under its JSON name with its number
    /// and wire type (probed through the JSON decoder, which rejects unknown names, and the
    /// binary encoder). Regenerating needs the Swift plugin; `scripts/dev/generate-proto.sh --check`
    /// does the byte-for-byte comparison.
    @Test func generatedSwiftMatchesTheSchema() throws {
        let set = try TestSupport.committedDescriptorSet()
        var messageNames: Set<String> = []
        var enumNames: [String: Int] = [:]
        for file in set.file where file.package == "avatar.crop.v1" {
            func collect(_ message: Google_Protobuf_DescriptorProto, scope: String) {
                let name = "\(scope).\(message.name)"
                messageNames.insert(name)
                for nested in message.nestedType { collect(nested, scope: name) }
                for nested in message.enumType { enumNames["\(name).\(nested.name)"] = nested.value.count }
            }
            for message in file.messageType { collect(message, scope: file.package) }
            for nested in file.enumType { enumNames["\(file.package).\(nested.name)"] = nested.value.count }
        }
        #expect(messageNames == Set(Self.swiftMessages.keys))
        #expect(enumNames == Self.swiftEnumCaseCounts)

        let messages = Self.messagesByName(set)
        for (name, type) in Self.swiftMessages {
            #expect(type.protoMessageName == name)
            let descriptor = try #require(messages[".\(name)"])
            for field in descriptor.field {
                try Self.probe(type, field: field, in: name)
            }
        }
    }

    /// Decodes `{"jsonName": sample}` into `type` and checks the binary encoding carries
    /// exactly the field's number with the field's wire type.
    private static func probe<M: SwiftProtobuf.Message>(
        _ type: M.Type, field: Google_Protobuf_FieldDescriptorProto, in messageName: String
    ) throws {
        let sample: String
        switch field.type {
        case .double, .float: sample = "1.5"
        case .int32, .int64, .uint32, .uint64, .sint32, .sint64, .fixed32, .fixed64, .sfixed32, .sfixed64:
            sample = "7"
        case .bool: sample = "true"
        case .string: sample = "\"x\""
        case .bytes: sample = "\"eA==\""
        case .enum: sample = "1"
        case .message where field.typeName == ".google.protobuf.Timestamp": sample = "\"2024-01-01T00:00:00Z\""
        case .message, .group: sample = "{}"
        }
        let value = field.label == .repeated ? "[\(sample)]" : sample
        let json = "{\"\(field.jsonName)\": \(value)}"
        let decoded: M
        do {
            decoded = try M(jsonString: json)
        } catch {
            Issue.record("\(messageName).\(field.name): the generated Swift does not know it (\(error))")
            return
        }
        let bytes: [UInt8] = try decoded.serializedBytes()
        let wireType: UInt64 =
            switch field.type {
            case .double, .fixed64, .sfixed64: 1
            case .float, .fixed32, .sfixed32: 5
            case .string, .bytes, .message, .group: 2
            default: field.label == .repeated ? 2 : 0  // packed repeated scalars
            }
        var index = 0
        let tag = try #require(readVarint(bytes, &index), "\(messageName).\(field.name): empty encoding")
        #expect(tag >> 3 == UInt64(field.number), "\(messageName).\(field.name): Swift uses number \(tag >> 3)")
        #expect(tag & 7 == wireType, "\(messageName).\(field.name): Swift uses wire type \(tag & 7)")
    }

    private static func readVarint(_ bytes: [UInt8], _ index: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.count, shift < 64 {
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }
}
