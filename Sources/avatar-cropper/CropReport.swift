import CropGeometry
import Foundation
import Imaging

/// The `crop --json` output: one object per run.
enum CropReport {
    static func json(_ result: RenderResult, extras: [(Rendition, String)], settings: EditorSettings) -> String {
        let plan = result.plan
        var object: [String: Any] = [
            "source_width": result.header.orientedSize.width,
            "source_height": result.header.orientedSize.height,
            "decode_width": result.decodeSize.width,
            "decode_height": result.decodeSize.height,
            "shrink_factor": result.shrinkFactor,
            "crop_x": plan.pixelCrop.x,
            "crop_y": plan.pixelCrop.y,
            "crop_side": plan.pixelCrop.side,
            "s_min": plan.sMin,
            "s_max": plan.sMax,
            "scale_requested": plan.scaleRequested.map { $0 as Any } ?? NSNull(),
            "scale_applied": plan.scaleApplied,
            "zoom_clamped": plan.zoomClamped,
            "quality_clamped": plan.qualityClamped,
            "quality_limited": plan.qualityLimited,
            "pan_clamped": plan.panClamped,
            "density": plan.density,
            "low_density": plan.lowDensity,
            "fallback_used": result.fallbackUsed,
            "decoder": result.decoder.description,
            "format": result.avatar.format.rawValue,
            "output_size": result.avatar.size,
            "output_bytes": result.avatar.data.count,
            "timings_ms": result.timings.milliseconds,
        ]
        if let hash = result.blurHash {
            object["blurhash"] = hash
        }
        if let report = result.faces {
            let pose = CropGeometry.pose(of: plan, settings: settings)
            object["pose"] = ["scale": pose.scale, "tx": pose.tx, "ty": pose.ty]
            object["face_rule_used"] = report.ruleUsed
            object["face_largest_only"] = report.largestOnly
            object["face_detect_ms"] = report.milliseconds
            object["face_detection_size"] = [report.detectionSize.width, report.detectionSize.height]
            if let error = report.error { object["face_error"] = error.rawValue }
            object["faces"] = report.faces.enumerated().map { index, face in
                [
                    "x": face.x, "y": face.y, "width": face.width, "height": face.height, "score": face.score,
                    "kept": report.kept.contains(index),
                ] as [String: Any]
            }
        }
        if !extras.isEmpty {
            object["extras"] = extras.map { extra, path in
                ["size": extra.size, "bytes": extra.data.count, "path": path] as [String: Any]
            }
        }
        return serialise(object)
    }

    static func errorJSON(code: String, message: String) -> String {
        serialise(["error": ["code": code, "message": message]])
    }

    private static func serialise(_ object: [String: Any]) -> String {
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else {
            return "{}"
        }
        return String(decoding: data, as: UTF8.self)
    }
}
