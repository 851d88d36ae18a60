import CropGeometry
import CropProtocol
import Foundation
import SwiftProtobuf
import Testing

/// The request's `default_crop`, and what the result and the metrics say of the face rule.
@Suite("Default crop and faces on the wire")
struct DefaultCropTests {
    private let finished = Date(timeIntervalSince1970: 1_700_000_100)

    @Test("default_crop: unset is the fleet's (nil), FACE and CENTRE as asked, an unknown value the fleet's")
    func requestField() throws {
        var message = TestSupport.minimalRequest()
        #expect(try ValidatedCropRequest(message).defaultCrop == nil)
        message.defaultCrop = .face
        #expect(try ValidatedCropRequest(message).defaultCrop == .face)
        message.defaultCrop = .centre
        let centre = try ValidatedCropRequest(message)
        #expect(centre.defaultCrop == .centre)
        // Round trip through the message a producer sends.
        #expect(try ValidatedCropRequest(centre.message).defaultCrop == .centre)
        message.defaultCrop = .UNRECOGNIZED(7)
        #expect(try ValidatedCropRequest(message).defaultCrop == nil)
        // The JSON mapping's names.
        let json = try Avatar_Crop_V1_CropRequest(
            jsonString: #"{"jobId": "j", "defaultCrop": "DEFAULT_CROP_FACE"}"#)
        #expect(json.defaultCrop == .face)
    }

    @Test("the result carries the pose of the square and the faces, kept ones marked")
    func resultFaces() throws {
        let request = try ValidatedCropRequest(TestSupport.minimalRequest())
        let source = PixelSize(width: 4000, height: 3000)
        let faces = [
            FaceBox(x: 1000, y: 800, width: 400, height: 500, score: 0.93),
            FaceBox(x: 3600, y: 100, width: 60, height: 75, score: 0.8),
        ]
        let choice = try #require(CropGeometry.faceChoice(faces: faces, source: source))
        let plan = try CropGeometry.plan(source: source, input: choice.input)
        var success = CropSuccess(avatarPath: "p", avatarVersion: 1, size: 512, format: .png, plan: plan)
        success.faces = faces
        success.keptFaces = choice.kept
        success.faceRuleUsed = true
        let result = CropResultBuilder.success(for: request, finishedAt: finished, success)
        guard case .success(let wire)? = result.outcome else {
            Issue.record("expected a success")
            return
        }
        #expect(wire.crop.faceRuleUsed)
        #expect(wire.crop.faces.map(\.kept) == [true, false])
        #expect(wire.crop.faces[0].score == 0.93 && wire.crop.faces[0].width == 400)
        // The pose plans the same square again: the app can open its editor on it.
        let pose = EditorPose(scale: wire.crop.poseScale, tx: wire.crop.poseTx, ty: wire.crop.poseTy)
        let again = try CropGeometry.plan(source: source, input: .pose(pose, reference: nil))
        #expect(again.pixelCrop == plan.pixelCrop)
    }

    @Test("the pose is given for the request's reference size")
    func poseForReference() throws {
        var message = TestSupport.minimalRequest()
        var pose = Avatar_Crop_V1_EditorPose()
        pose.scale = 2
        pose.tx = 40
        message.pose = pose
        message.referenceWidth = 1000
        message.referenceHeight = 750
        let request = try ValidatedCropRequest(message)
        let source = PixelSize(width: 4000, height: 3000)
        let plan = try CropGeometry.plan(source: source, input: request.input, settings: request.editorSettings)
        let result = CropResultBuilder.success(
            for: request, finishedAt: finished,
            CropSuccess(avatarPath: "p", avatarVersion: 1, size: 512, format: .png, plan: plan))
        guard case .success(let wire)? = result.outcome else { return }
        // Not clamped: the pose comes back as sent, in the reference's terms.
        #expect(abs(wire.crop.poseScale - 2) < 1e-9 && abs(wire.crop.poseTx - 40) < 1e-9)
        #expect(wire.crop.faces.isEmpty && !wire.crop.faceRuleUsed)
    }

    @Test("the metrics carry the face rule's numbers only")
    func metrics() {
        var sample = CropMetricsSample(outcome: .applied)
        sample.faceCount = 3
        sample.faceBestScore = 0.91
        sample.faceDetectMs = 8.5
        sample.faceRuleUsed = true
        let message = sample.message
        #expect(message.faceCount == 3 && message.faceBestScore == 0.91 && message.faceDetectMs == 8.5)
        #expect(message.faceRuleUsed)
    }
}
