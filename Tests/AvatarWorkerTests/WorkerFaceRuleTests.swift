import CropGeometry
import CropProtocol
import Foundation
import Storage
import TestEnvironment
import Testing

@testable import AvatarWorker

/// A request without a pose through the whole worker (docs/ARCHITECTURE.md §2, "Faces"): the render helper finds
/// the faces, the result event carries them and the pose of the square, the metrics their numbers; a request that
/// asks for the centred square gets it.
@Suite(
    "Worker: the face default (integration)", .requires(.database, .kafka),
    .enabled(if: FacePhotos.pascal != nil, Comment(rawValue: FacePhotos.missingPascal)),
    .enabled(if: FacePhotos.model != nil, Comment(rawValue: FacePhotos.missingModel)))
struct WorkerFaceRuleTests {
    /// Puts one of dlib's PASCAL photos into the harness's store.
    private func upload(_ name: String, to harness: WorkerHarness) throws -> String {
        let file = try #require(FacePhotos.pascal).appendingPathComponent(name)
        let key = "uploads/\(UUID().uuidString.lowercased())-\(name)"
        try harness.store.put(
            key, data: Array(try Data(contentsOf: file)), options: PutOptions(contentType: "image/jpeg"))
        return key
    }

    @Test("no pose: the faces and the pose in the result, the face rule's numbers in the metrics; CENTRE: none")
    func faceDefault() async throws {
        try await withHarness(store: .localDirectory) { harness in
            try harness.startWorker()
            let face = WorkerHarness.request(source: try upload("2008_002506.jpg", to: harness))
            var centre = WorkerHarness.request(source: try upload("2008_002506.jpg", to: harness))
            centre.defaultCrop = .centre
            try await harness.enqueue(face)
            try await harness.enqueue(centre)
            let results = try await harness.events.results(harness.topics.results, jobs: [face.jobID, centre.jobID])
            #expect(results.count == 2)
            for result in results {
                guard case .success(let success) = result.outcome else {
                    Issue.record("expected success, got \(result)")
                    continue
                }
                let crop = success.crop
                if result.jobID == face.jobID {
                    #expect(crop.faceRuleUsed && crop.faces.count == 3, "\(crop)")
                    #expect(crop.faces.allSatisfy { $0.kept })
                    // The pose plans the published square again.
                    let source = PixelSize(width: Int(crop.sourceWidth), height: Int(crop.sourceHeight))
                    let plan = try CropGeometry.plan(
                        source: source,
                        input: .pose(
                            EditorPose(scale: crop.poseScale, tx: crop.poseTx, ty: crop.poseTy), reference: nil))
                    #expect(plan.pixelCrop == PixelCrop(x: Int(crop.x), y: Int(crop.y), side: Int(crop.side)))
                } else {
                    #expect(!crop.faceRuleUsed && crop.faces.isEmpty)
                    #expect(crop.side == min(crop.sourceWidth, crop.sourceHeight))
                }
            }
            let metrics = try await harness.events.waitFor(harness.topics.metrics, count: 2)
            let samples = try metrics.map {
                try CropCodec.decode(Avatar_Crop_V1_CropMetrics.self, from: $0.value, format: .protobuf)
            }
            #expect(samples.filter { $0.faceRuleUsed }.count == 1)
            #expect(samples.contains { $0.faceCount == 3 && $0.faceBestScore > 0.75 && $0.faceDetectMs > 0 })
        }
    }
}
