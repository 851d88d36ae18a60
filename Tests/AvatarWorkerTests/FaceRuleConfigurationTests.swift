import CropGeometry
import CropProtocol
import Foundation
import Imaging
import Testing

@testable import AvatarWorker

/// The fleet's default crop, and what a job's face report puts in its events (docs/ARCHITECTURE.md §4).
@Suite("Face rule: configuration and events")
struct FaceRuleConfigurationTests {
    @Test("image.default-crop is face by default, centre on request, anything else refused")
    func defaultCrop() throws {
        #expect(try WorkerFactory.defaultCrop(ConfigurationValues()) == .face)
        let centre = try ConfigurationValues(flags: ["image.default-crop=centre"])
        #expect(try WorkerFactory.defaultCrop(centre) == .centre)
        let wrong = try ConfigurationValues(environment: ["AVATAR_IMAGE_DEFAULT_CROP": "eyes"])
        #expect(throws: ConfigurationValues.Error.self) { try WorkerFactory.defaultCrop(wrong) }
    }

    @Test("a face report goes into the result's success and the metrics' numbers; none leaves them as they were")
    func events() {
        let faces = [
            FaceBox(x: 10, y: 20, width: 100, height: 120, score: 0.9),
            FaceBox(x: 300, y: 20, width: 30, height: 36, score: 0.8),
        ]
        let report = FaceReport(
            faces: faces, kept: [0], ruleUsed: true, largestOnly: false,
            detectionSize: PixelSize(width: 320, height: 240), time: .milliseconds(12), error: nil)
        let plain = CropSuccess(avatarPath: "p", avatarVersion: 1, size: 512, format: .png)
        let success = plain.adding(faces: report)
        #expect(success.faces == faces && success.keptFaces == [0] && success.faceRuleUsed)
        #expect(plain.adding(faces: nil).faces.isEmpty && !plain.adding(faces: nil).faceRuleUsed)

        var sample = CropMetricsSample(outcome: .applied)
        sample.record(faces: report)
        #expect(sample.faceCount == 2 && sample.faceBestScore == 0.9 && sample.faceRuleUsed)
        #expect(abs(sample.faceDetectMs - 12) < 1e-9)
        var none = CropMetricsSample(outcome: .applied)
        none.record(faces: nil)
        #expect(none.faceCount == 0 && none.faceDetectMs == 0 && !none.faceRuleUsed)
    }
}
