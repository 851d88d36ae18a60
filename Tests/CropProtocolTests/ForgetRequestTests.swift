import CropProtocol
import Foundation
import SwiftProtobuf
import Testing

/// `CropRequest.kind`: a forget carries ids and a time only, and survives both wire formats.
@Suite("Forget requests")
struct ForgetRequestTests {
    private func forgetMessage() -> Avatar_Crop_V1_CropRequest {
        var message = TestSupport.minimalRequest()
        message.sourceKey = ""
        message.kind = .forget
        return message
    }

    @Test func aForgetNeedsNoSourceAndIgnoresTheCropFields() throws {
        var message = forgetMessage()
        message.output.size = 80
        let request = try ValidatedCropRequest(message)
        #expect(request.kind == .forget)
        #expect(request.sourceKey.isEmpty)
        #expect(request.userID == TestSupport.userID)
        #expect(request.outputSize == 512)
    }

    @Test func aForgetWithASourceKeyIsRefused() {
        var message = forgetMessage()
        message.sourceKey = "uploads/x.jpg"
        #expect(throws: ProtocolError.self) { try ValidatedCropRequest(message) }
    }

    @Test func anUnknownKindIsRefusedAndACropIsTheDefault() throws {
        var message = TestSupport.minimalRequest()
        #expect(try ValidatedCropRequest(message).kind == .crop)
        message.kind = .crop
        #expect(try ValidatedCropRequest(message).kind == .crop)
        message.kind = .UNRECOGNIZED(9)
        #expect(throws: ProtocolError.self) { try ValidatedCropRequest(message) }
    }

    @Test func aForgetRoundTripsInBothFormats() throws {
        let forget = ValidatedCropRequest.forget(
            jobID: "forget-1", userID: TestSupport.userID, requestedAt: Date(timeIntervalSince1970: 1_760_000_000))
        for format in [CropWireFormat.protobuf, .json] {
            let bytes = try CropCodec.encode(forget.message, format: format)
            let decoded = try ValidatedCropRequest(CropCodec.decodeRequest(bytes, contentType: format.contentType))
            #expect(decoded == forget, "\(format)")
        }
        let json = String(decoding: try CropCodec.encode(forget.message, format: .json), as: UTF8.self)
        #expect(json.contains("KIND_FORGET"))
        #expect(!json.contains("sourceKey"))
    }

    @Test func aForgottenResultSaysSoWithoutAnAvatar() {
        #expect(CropDisposition.forgotten.wireValue == .forgotten)
        #expect(CropOutcome(.forgotten).wireValue == .forgotten)
    }
}
