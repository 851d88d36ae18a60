import CropProtocol
import Imaging

// What the face rule did, into the job's events (docs/ARCHITECTURE.md §4): the result event carries the faces and
// whether the rule chose the square; the metrics record numbers only.

extension CropSuccess {
    /// This success with the faces of `report` (none when no face was looked for).
    func adding(faces report: FaceReport?) -> CropSuccess {
        guard let report else { return self }
        var success = self
        success.faces = report.faces
        success.keptFaces = report.kept
        success.faceRuleUsed = report.ruleUsed
        return success
    }
}

extension CropMetricsSample {
    /// The face rule's numbers: how many faces, the best score, the detection's time, whether the rule was used.
    mutating func record(faces report: FaceReport?) {
        guard let report else { return }
        faceCount = report.faces.count
        faceBestScore = report.bestScore
        faceDetectMs = report.milliseconds
        faceRuleUsed = report.ruleUsed
    }
}
