import CropGeometry
import Glibc

/// Turns a relative `PoseSpec` into the request an app would send for an oriented source.
enum PoseMix {
    static func input(for spec: PoseSpec, source: PixelSize, settings: EditorSettings) throws -> InputJSON {
        let reference = spec.referenceLongEdge.map { thumbnail(of: source, longEdge: $0) }
        // Reference pixels per source pixel (1 without a reference).
        let factor = reference.map { Double($0.width) / Double(source.width) } ?? 1
        switch spec.kind {
        case "centred":
            return InputJSON(kind: "centred")
        case "pose":
            let bounds = try CropGeometry.bounds(source: source, settings: settings)
            let t = spec.zoom ?? 0
            let scale = bounds.sMin * pow(bounds.sMax / bounds.sMin, t)
            let sigma = settings.screenScale
            let limitX = max(0, (Double(source.width) / sigma * scale - settings.maskDiameter) / 2)
            let limitY = max(0, (Double(source.height) / sigma * scale - settings.maskDiameter) / 2)
            // On the thumbnail the same display needs a zoom larger by 1/factor; offsets are points.
            return InputJSON(
                kind: "pose", scale: scale / factor, tx: (spec.panX ?? 0) * limitX, ty: (spec.panY ?? 0) * limitY,
                referenceWidth: reference?.width, referenceHeight: reference?.height)
        case "rect":
            let short = Double(min(source.width, source.height))
            let side = (spec.side ?? 1) * short
            let x = (spec.centreX ?? 0.5) * Double(source.width) - side / 2
            let y = (spec.centreY ?? 0.5) * Double(source.height) - side / 2
            return InputJSON(
                kind: "rect", x: x * factor, y: y * factor, side: side * factor,
                referenceWidth: reference?.width, referenceHeight: reference?.height)
        default:
            throw BenchError("unknown pose kind \(spec.kind)")
        }
    }

    /// The app's display thumbnail: long edge `longEdge`, aspect kept, sides rounded.
    static func thumbnail(of source: PixelSize, longEdge: Int) -> PixelSize {
        let scale = Double(longEdge) / Double(max(source.width, source.height))
        return PixelSize(
            width: Int((Double(source.width) * scale).rounded()),
            height: Int((Double(source.height) * scale).rounded()))
    }

    private static func pow(_ base: Double, _ exponent: Double) -> Double {
        // exp(log) without Foundation's math overlay: Glibc's pow.
        Glibc.pow(base, exponent)
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
