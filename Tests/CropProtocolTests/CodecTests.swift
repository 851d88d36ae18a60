import CropGeometry
import CropProtocol
import Foundation
import SwiftProtobuf
import Testing

@Suite("Codec")
struct CodecTests {
    private func decodeError(_ bytes: [UInt8], contentType: String?) -> ProtocolError? {
        do {
            _ = try CropCodec.decodeRequest(bytes, contentType: contentType)
            return nil
        } catch {
            return error
        }
    }

    private func fullRequest() -> Avatar_Crop_V1_CropRequest {
        var message = TestSupport.minimalRequest()
        message.pose.scale = 1.5
        message.pose.tx = -3
        message.pose.maskDiameterPt = 320
        message.pose.screenScale = 3
        message.referenceWidth = 1170
        message.referenceHeight = 1560
        message.output.size = 512
        message.output.format = .jpeg
        message.output.quality = 85
        message.extraSizes = [80]
        message.wantBlurhash = true
        message.background = "#112233"
        return message
    }

    @Test func contentTypeSelectsTheFormat() throws {
        #expect(try CropWireFormat(contentType: nil) == .protobuf)
        #expect(try CropWireFormat(contentType: "") == .protobuf)
        #expect(try CropWireFormat(contentType: "application/x-protobuf") == .protobuf)
        #expect(
            try CropWireFormat(contentType: "application/protobuf; messageType=avatar.crop.v1.CropRequest")
                == .protobuf)
        #expect(try CropWireFormat(contentType: "application/json") == .json)
        #expect(try CropWireFormat(contentType: " Application/JSON ; charset=utf-8") == .json)
        #expect(CropWireFormat.json.contentType == "application/json")
        #expect(CropWireFormat.protobuf.contentType == "application/x-protobuf")
        for other in ["text/plain", "application/xml", "application/jsonx"] {
            #expect(throws: ProtocolError.self) { try CropWireFormat(contentType: other) }
            #expect(decodeError([], contentType: other)?.code == .unsupportedContentType)
        }
    }

    @Test func binaryRoundTrip() throws {
        let message = fullRequest()
        let bytes = try CropCodec.encode(message)
        #expect(try CropCodec.decodeRequest(bytes, contentType: nil) == message)
        #expect(try CropCodec.decodeRequest(bytes, contentType: "application/x-protobuf") == message)
    }

    @Test func jsonRoundTripUsesCamelCaseByDefault() throws {
        let message = fullRequest()
        let json = try CropCodec.encode(message, format: .json)
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.contains("\"jobId\""))
        #expect(text.contains("\"maskDiameterPt\""))
        #expect(text.contains("\"IMAGE_FORMAT_JPEG\""))
        #expect(!text.contains("job_id"))
        #expect(try CropCodec.decodeRequest(json, contentType: "application/json") == message)

        let snake = try CropCodec.encode(message, format: .json, preserveProtoFieldNames: true)
        #expect(String(decoding: snake, as: UTF8.self).contains("\"job_id\""))
        #expect(try CropCodec.decodeRequest(snake, contentType: "application/json") == message)
    }

    @Test func jsonAcceptsCamelCaseAndProtoFieldNames() throws {
        let camel = """
            {"jobId": "job-7", "userId": "8f14e45f-ceea-467a-9575-6b2c3f1a9e11", "sourceKey": "uploads/x.jpg",
             "rect": {"x": 10, "y": 20, "side": 300}, "referenceWidth": 640, "referenceHeight": 480,
             "output": {"size": 256, "format": "IMAGE_FORMAT_JPEG", "quality": 70}, "extraSizes": [80],
             "wantBlurhash": true, "requestedAt": "2024-03-01T12:00:00.500Z", "background": "#000000"}
            """
        let snake = """
            {"job_id": "job-7", "user_id": "8f14e45f-ceea-467a-9575-6b2c3f1a9e11", "source_key": "uploads/x.jpg",
             "rect": {"x": 10, "y": 20, "side": 300}, "reference_width": 640, "reference_height": 480,
             "output": {"size": 256, "format": 2, "quality": 70}, "extra_sizes": [80],
             "want_blurhash": true, "requested_at": "2024-03-01T12:00:00.500Z", "background": "#000000"}
            """
        let fromCamel = try CropCodec.validatedRequest(Array(camel.utf8), contentType: "application/json")
        let fromSnake = try CropCodec.validatedRequest(Array(snake.utf8), contentType: "application/json")
        #expect(fromCamel == fromSnake)
        let reference = PixelSize(width: 640, height: 480)
        #expect(fromCamel.input == .rect(PixelRect(x: 10, y: 20, side: 300), reference: reference))
        #expect(fromCamel.formats == [.jpeg])
        #expect(fromCamel.quality == 70)
        #expect(fromCamel.outputSize == 256)
        #expect(fromCamel.extraSizes == [80])
        #expect(fromCamel.wantBlurHash)
        #expect(fromCamel.background == RGBColor(r: 0, g: 0, b: 0))
        #expect(fromCamel.requestedAt == Date(timeIntervalSince1970: 1_709_294_400.5))
    }

    @Test func malformedBytesAreRejected() throws {
        let garbage: [[UInt8]] = [
            [0xFF, 0xFF, 0xFF],  // invalid tag
            [0x0A, 0x10, 0x61],  // string field longer than the message
            [0x5A, 0x02, 0x08],  // truncated requested_at
        ]
        for bytes in garbage {
            #expect(decodeError(bytes, contentType: nil)?.code == .malformed)
        }
        let jsonGarbage = ["{", "[]", "{\"jobId\": 5}", "{\"job_idd\": \"x\"}", "{\"output\": {\"format\": \"GIF\"}}"]
        for text in jsonGarbage {
            #expect(decodeError(Array(text.utf8), contentType: "application/json")?.code == .malformed, "\(text)")
        }
        // Binary sent with a JSON content type, and JSON sent as binary.
        let binary = try CropCodec.encode(fullRequest())
        #expect(decodeError(binary, contentType: "application/json")?.code == .malformed)
        #expect(decodeError(Array("{\"jobId\": \"x\"}".utf8), contentType: nil)?.code == .malformed)
    }

    @Test func oversizedMessagesAreRejected() throws {
        var message = fullRequest()
        message.sourceKey = String(repeating: "k", count: CropCodec.maxMessageBytes)
        let bytes = try CropCodec.encode(message)
        let failure = decodeError(bytes, contentType: nil)
        #expect(failure?.code == .malformed)
        #expect(failure?.errorCode == .malformedRequest)
    }

    @Test func malformedErrorsKeepDetailOutOfTheDescription() throws {
        let failure = try #require(
            decodeError(
                Array("{\"jobId\": \"secret-job\", \"nope\": 1}".utf8),
                contentType: "application/json"))
        #expect(failure.code == .malformed)
        #expect(!failure.description.contains("secret-job"))
        #expect(failure.detail != nil)
        #expect(failure.jobID == nil)
    }

    @Test func binaryKeepsUnknownFieldsFromNewerProducers() throws {
        var bytes = try CropCodec.encode(fullRequest())
        bytes += [0xF8, 0x06, 0x01]  // field 111, varint 1: unknown to this schema
        let decoded = try CropCodec.decodeRequest(bytes, contentType: nil)
        #expect(!decoded.unknownFields.data.isEmpty)
        #expect(try ValidatedCropRequest(decoded).jobID == "job-1")
    }

    @Test func resultsAndMetricsRoundTripInBothFormats() throws {
        let request = try ValidatedCropRequest(fullRequest())
        let result = CropResultBuilder.success(
            for: request, finishedAt: Date(timeIntervalSince1970: 1_700_000_010),
            CropSuccess(
                avatarPath: "users/x/avatar_512.jpg", avatarVersion: 3, size: 512, format: .jpeg,
                renditions: [CropRendition(size: 80, path: "users/x/avatar_80.jpg")]))
        var sample = CropMetricsSample(outcome: .applied)
        sample.sourceWidth = 4032
        sample.latency.totalMs = 123.5
        sample.finishedAt = Date(timeIntervalSince1970: 1_700_000_010)
        let metrics = sample.message
        for format in [CropWireFormat.protobuf, .json] {
            let resultBytes = try CropCodec.encode(result, format: format)
            #expect(try CropCodec.decode(Avatar_Crop_V1_CropResult.self, from: resultBytes, format: format) == result)
            let metricBytes = try CropCodec.encode(metrics, format: format)
            #expect(try CropCodec.decode(Avatar_Crop_V1_CropMetrics.self, from: metricBytes, format: format) == metrics)
        }
    }

    @Test func encodingATimestampOutsideTheJSONRangeFails() {
        var message = fullRequest()
        message.requestedAt = Google_Protobuf_Timestamp(seconds: 300_000_000_000, nanos: 0)
        #expect(throws: ProtocolError.self) { try CropCodec.encode(message, format: .json) }
        #expect((try? CropCodec.encode(message, format: .protobuf)) != nil)
    }
}
