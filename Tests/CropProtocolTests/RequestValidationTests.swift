import CropGeometry
import CropProtocol
import Foundation
import SwiftProtobuf
import Testing

@Suite("Request validation")
struct RequestValidationTests {
    private func validate(_ message: Avatar_Crop_V1_CropRequest) throws(ProtocolError) -> ValidatedCropRequest {
        try ValidatedCropRequest(message)
    }

    private func error(_ message: Avatar_Crop_V1_CropRequest) -> ProtocolError? {
        do {
            _ = try ValidatedCropRequest(message)
            return nil
        } catch {
            return error
        }
    }

    @Test func defaultsAreApplied() throws {
        let request = try validate(TestSupport.minimalRequest())
        #expect(request.jobID == "job-1")
        #expect(request.userID == TestSupport.userID)
        #expect(request.sourceKey == "uploads/8f14e45f/original.heic")
        #expect(request.input == .centred)
        #expect(request.outputSize == 512)
        #expect(request.formats == nil && request.extraFormats == nil)
        #expect(request.quality == 90)
        #expect(request.extraSizes == [])
        #expect(request.wantBlurHash == false)
        #expect(request.background == nil)
        #expect(request.requestedAt == Date(timeIntervalSince1970: 1_700_000_000.25))
        #expect(request.editorSettings == EditorSettings())
    }

    @Test func poseWithReferenceMapsIntoCropInputAndSettings() throws {
        var message = TestSupport.minimalRequest()
        message.pose.scale = 1.5
        message.pose.tx = -12.5
        message.pose.ty = 40
        message.pose.maskDiameterPt = 300
        message.pose.screenScale = 2
        message.referenceWidth = 1000
        message.referenceHeight = 750
        message.output.size = 256
        let request = try validate(message)
        let expected = CropInput.pose(
            EditorPose(scale: 1.5, tx: -12.5, ty: 40), reference: PixelSize(width: 1000, height: 750))
        #expect(request.input == expected)
        #expect(request.editorSettings == EditorSettings(screenScale: 2, maskDiameter: 300, outputSize: 256))
        #expect(request.outputSize == 256)
    }

    @Test func poseWithoutReferenceOrEditorValuesUsesDefaults() throws {
        var message = TestSupport.minimalRequest()
        message.pose.scale = 2
        let request = try validate(message)
        #expect(request.input == .pose(EditorPose(scale: 2, tx: 0, ty: 0), reference: nil))
        #expect(request.editorSettings == EditorSettings())
    }

    @Test func rectMapsIntoCropInput() throws {
        var message = TestSupport.minimalRequest()
        message.rect.x = 10
        message.rect.y = -4
        message.rect.side = 300.5
        message.referenceWidth = 640
        message.referenceHeight = 480
        let request = try validate(message)
        let reference = PixelSize(width: 640, height: 480)
        #expect(request.input == .rect(PixelRect(x: 10, y: -4, side: 300.5), reference: reference))
        message.referenceWidth = 0
        message.referenceHeight = 0
        #expect(try validate(message).input == .rect(PixelRect(x: 10, y: -4, side: 300.5), reference: nil))
    }

    @Test func referenceMustBeBothOrNeither() {
        var message = TestSupport.minimalRequest()
        message.pose.scale = 1
        message.referenceWidth = 640
        #expect(error(message)?.code == .invalidValue("reference_height"))
        message.referenceWidth = 0
        message.referenceHeight = 480
        #expect(error(message)?.code == .invalidValue("reference_width"))
    }

    @Test(arguments: ["", "../x", "a/b", "job 1", "jöb", "job\n", String(repeating: "j", count: 129), "%2e%2e"])
    func invalidJobIDsAreRejected(_ jobID: String) {
        var message = TestSupport.minimalRequest()
        message.jobID = jobID
        let failure = error(message)
        #expect(failure?.code == .invalidJobID)
        #expect(failure?.errorCode == .invalidID)
        #expect(failure?.jobID == nil)
    }

    @Test(arguments: ["a", "job-1:retry_2.x", String(repeating: "J", count: 128), "..", "2024-01-01T00:00:00"])
    func validJobIDsAreAccepted(_ jobID: String) throws {
        var message = TestSupport.minimalRequest()
        message.jobID = jobID
        #expect(try validate(message).jobID == jobID)
    }

    @Test(arguments: [
        "", "../x", "not-a-uuid", "8f14e45fceea467a95756b2c3f1a9e11", "{8f14e45f-ceea-467a-9575-6b2c3f1a9e11}",
        "8f14e45f-ceea-467a-9575-6b2c3f1a9e1", "8f14e45f-ceea-467a-9575-6b2c3f1a9e11/../x",
        "8f14e45f-ceea-467a-9575-6b2c3f1a9e1g", "00000000-0000-0000-0000-000000000000",
        " 8f14e45f-ceea-467a-9575-6b2c3f1a9e1",
    ])
    func invalidUserIDsAreRejected(_ userID: String) {
        var message = TestSupport.minimalRequest()
        message.userID = userID
        let failure = error(message)
        #expect(failure?.code == .invalidUserID)
        #expect(failure?.errorCode == .invalidID)
        #expect(failure?.jobID == "job-1")
        #expect(failure?.userID == nil)
    }

    @Test func userIDIsCaseInsensitiveAndNormalised() throws {
        var message = TestSupport.minimalRequest()
        message.userID = "8f14e45f-ceea-467a-9575-6b2c3f1a9e11"
        let lower = try validate(message)
        message.userID = "8F14E45F-CEEA-467A-9575-6B2C3F1A9E11"
        let upper = try validate(message)
        #expect(lower.userID == upper.userID)
        #expect(upper.message.userID == "8f14e45f-ceea-467a-9575-6b2c3f1a9e11")
    }

    @Test(arguments: [
        "/etc/passwd", "uploads/../users/x/avatar_512.png", "uploads//x", "uploads/./x", "..", "uploads/x/",
        "uploads\\x", "uploads/x\u{0}", "uploads/\nx", "uploads/\u{85}x", String(repeating: "k", count: 1025),
    ])
    func unsafeSourceKeysAreRejected(_ key: String) {
        var message = TestSupport.minimalRequest()
        message.sourceKey = key
        #expect(error(message)?.code == .invalidValue("source_key"))
    }

    @Test func missingRequiredFieldsAreNamed() {
        var message = TestSupport.minimalRequest()
        message.sourceKey = ""
        #expect(error(message)?.code == .missingField("source_key"))
        message = TestSupport.minimalRequest()
        message.clearRequestedAt()
        #expect(error(message)?.code == .missingField("requested_at"))
        #expect(error(message)?.errorCode == .invalidRequest)
    }

    @Test func invalidTimestampsAreRejected() {
        var message = TestSupport.minimalRequest()
        message.requestedAt = Google_Protobuf_Timestamp(seconds: 0, nanos: 0)
        #expect(error(message)?.code == .invalidValue("requested_at"))
        message.requestedAt = Google_Protobuf_Timestamp(seconds: 1_700_000_000, nanos: 1_000_000_000)
        #expect(error(message)?.code == .invalidValue("requested_at"))
        message.requestedAt = Google_Protobuf_Timestamp(seconds: 253_402_300_800, nanos: 0)
        #expect(error(message)?.code == .invalidValue("requested_at"))
    }

    @Test func laterFieldErrorsCarryTheIDsButDescriptionsDoNot() throws {
        var message = TestSupport.minimalRequest()
        message.output.size = 8
        let failure = try #require(error(message))
        #expect(failure.code == .invalidValue("output.size"))
        #expect(failure.jobID == "job-1")
        #expect(failure.userID == TestSupport.userID)
        for text in [failure.description, failure.debugDescription, failure.userMessage] {
            #expect(!text.contains("job-1"))
            #expect(!text.lowercased().contains("8f14e45f"))
        }
        #expect(failure.description.contains("output.size"))
    }

    @Test func outputSpecIsBounded() {
        var message = TestSupport.minimalRequest()
        message.output.size = 4097
        #expect(error(message)?.code == .invalidValue("output.size"))
        message.output.size = 512
        message.output.quality = 101
        #expect(error(message)?.code == .invalidValue("output.quality"))
        message.output.quality = 0
        message.output.format = .UNRECOGNIZED(9)
        #expect(error(message)?.code == .invalidValue("output.format"))
    }

    @Test func jpegOutputKeepsItsQuality() throws {
        var message = TestSupport.minimalRequest()
        message.output.format = .jpeg
        message.output.quality = 75
        message.output.size = 1024
        let request = try validate(message)
        #expect(request.formats == [.jpeg])
        #expect(request.quality == 75)
        #expect(request.outputSize == 1024)
        #expect(request.editorSettings.outputSize == 1024)
    }

    @Test func extraSizesAreDistinctSortedAndBounded() throws {
        var message = TestSupport.minimalRequest()
        message.extraSizes = [256, 80, 512, 80]
        #expect(try validate(message).extraSizes == [80, 256])
        message.extraSizes = [80, 96, 128, 160, 192]
        #expect(error(message)?.code == .invalidValue("extra_sizes"))
        message.extraSizes = [8]
        #expect(error(message)?.code == .invalidValue("extra_sizes"))
    }

    @Test func backgroundColourIsParsed() throws {
        var message = TestSupport.minimalRequest()
        message.background = "#ff8800"
        #expect(try validate(message).background == RGBColor(r: 255, g: 136, b: 0))
        message.background = "#0A0b0C"
        #expect(try validate(message).background == RGBColor(r: 10, g: 11, b: 12))
        for bad in ["red", "#FFF", "ff8800", "#ff88000", "#gg0000", ""] {
            message.background = bad
            #expect(error(message)?.code == .invalidValue("background"), "\(bad)")
        }
    }

    @Test func poseValuesMustBeFiniteAndInRange() {
        let cases: [(WritableKeyPath<Avatar_Crop_V1_EditorPose, Double>, Double, String)] = [
            (\.scale, 0, "pose.scale"), (\.scale, -1, "pose.scale"), (\.scale, .nan, "pose.scale"),
            (\.tx, .infinity, "pose.tx"), (\.ty, -.infinity, "pose.ty"),
            (\.screenScale, 0.25, "pose.screen_scale"), (\.screenScale, .nan, "pose.screen_scale"),
            (\.maskDiameterPt, -3, "pose.mask_diameter_pt"), (\.maskDiameterPt, 20_000, "pose.mask_diameter_pt"),
        ]
        for (path, value, field) in cases {
            var message = TestSupport.minimalRequest()
            message.pose.scale = 1
            message.pose[keyPath: path] = value
            #expect(error(message)?.code == .invalidValue(field), "\(field) = \(value)")
        }
    }

    @Test func rectValuesMustBeFiniteWithPositiveSide() {
        let cases: [(WritableKeyPath<Avatar_Crop_V1_PixelRect, Double>, Double, String)] = [
            (\.side, 0, "rect.side"), (\.side, -5, "rect.side"), (\.x, .nan, "rect.x"), (\.y, .infinity, "rect.y"),
        ]
        for (path, value, field) in cases {
            var message = TestSupport.minimalRequest()
            message.rect.side = 100
            message.rect[keyPath: path] = value
            #expect(error(message)?.code == .invalidValue(field), "\(field) = \(value)")
        }
    }

    /// docs/ARCHITECTURE.md §7: a prepend character (U+0600) glues itself to the following `/`, so a
    /// split on Characters missed the `..` segment the storage backends see.
    @Test(arguments: ["a\u{0600}/../b", "uploads/x\u{0600}/../../y", "a\u{0600}/./b", "a\u{0600}//b"])
    func sourceKeyIsCheckedOnBytes(_ key: String) {
        #expect(!CropRequestLimits.isValidSourceKey(key))
    }

    @Test(arguments: [
        CropInput.centred,
        .pose(EditorPose(scale: 1.25, tx: 3, ty: -7.5), reference: PixelSize(width: 1170, height: 2532)),
        .pose(EditorPose(scale: 4, tx: 0, ty: 0), reference: nil),
        .rect(PixelRect(x: 12, y: 34, side: 560), reference: PixelSize(width: 4032, height: 3024)),
    ])
    func validatedRequestsRoundTripThroughTheMessage(_ input: CropInput) throws {
        let settings: EditorSettings? =
            if case .pose = input { EditorSettings(screenScale: 2, maskDiameter: 280, outputSize: 640) } else { nil }
        let original = ValidatedCropRequest(
            jobID: "job:42", userID: TestSupport.userID, sourceKey: "uploads/a/b.jpg", input: input, outputSize: 640,
            formats: [.jpeg, .avif], extraFormats: [.webp], quality: 82, extraSizes: [80, 160], wantBlurHash: true,
            requestedAt: Date(timeIntervalSince1970: 1_712_345_678.5), background: RGBColor(r: 1, g: 2, b: 3),
            editorSettings: settings)
        let bytes = try CropCodec.encode(original.message)
        let decoded = try CropCodec.validatedRequest(bytes, contentType: nil)
        #expect(decoded == original)
        let json = try CropCodec.encode(original.message, format: .json)
        #expect(try CropCodec.validatedRequest(json, contentType: "application/json") == original)
    }
}

@Suite("Request clock sanity")
struct RequestClockTests {
    @Test("requested_at more than the allowed skew in the future is INVALID_REQUEST; up to it is accepted")
    func farFuture() throws {
        let now = Date(timeIntervalSince1970: 1_750_000_000)
        func request(_ offset: TimeInterval) -> ValidatedCropRequest {
            ValidatedCropRequest(
                jobID: "j", userID: TestSupport.userID, sourceKey: "uploads/a.jpg", requestedAt: now + offset)
        }
        try request(300).checkClock(now: now, maxSkew: 300)
        try request(-86_400).checkClock(now: now, maxSkew: 300)
        #expect(throws: ProtocolError.self) { try request(301).checkClock(now: now, maxSkew: 300) }
        do {
            // Milliseconds sent as seconds: tens of thousands of years ahead.
            try request(1_750_000_000_000 - 1_750_000_000).checkClock(now: now, maxSkew: 300)
            Issue.record("accepted")
        } catch {
            #expect(error.errorCode == .invalidRequest)
            #expect(error.jobID == "j" && error.userID == TestSupport.userID)
        }
    }
}
