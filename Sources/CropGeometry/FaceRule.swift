// The default crop of a request without a pose (docs/ARCHITECTURE.md §1, "No pose"): on the faces a detector
// found, or the centred square. Pure and deterministic, like the rest of this module, so the app can run the
// same rule on the faces it finds itself.

/// Which square a request without a pose gets.
public enum DefaultCrop: String, Sendable, Hashable, Codable, CaseIterable {
    /// The square the face rule chooses (`CropGeometry.faceChoice`), or the centred one when it finds no face.
    case face
    /// The centred square at minimum zoom.
    case centre
}

/// A point in oriented source pixels.
public struct FacePoint: Sendable, Hashable, Codable {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}

/// One face a detector found, in oriented source pixels: its box, the detector's confidence (0...1) and, when
/// the detector gives them, the centres of the eyes (the person's right eye, then left).
public struct FaceBox: Sendable, Hashable, Codable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double
    public var score: Double
    public var rightEye: FacePoint?
    public var leftEye: FacePoint?

    public init(
        x: Double, y: Double, width: Double, height: Double, score: Double, rightEye: FacePoint? = nil,
        leftEye: FacePoint? = nil
    ) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.score = score
        self.rightEye = rightEye
        self.leftEye = leftEye
    }
}

/// The parameters of the face rule. Box-based and explainable: which faces count, how much of the square they
/// fill, where the eyes sit.
public struct FaceRule: Sendable, Hashable, Codable {
    /// Faces scoring below this are not faces.
    public var minScore: Double
    /// Faces smaller than this fraction of the largest face's area are background (passers-by, posters).
    public var minAreaFraction: Double
    /// The kept faces' union spans this fraction of the square's side (its larger extent): a face, not a landscape.
    public var fill: Double
    /// The kept faces' eye line sits this fraction of the side below the square's top (headroom above the eyes).
    public var eyeLevel: Double

    public init(minScore: Double = 0.75, minAreaFraction: Double = 0.25, fill: Double = 0.5, eyeLevel: Double = 0.4) {
        self.minScore = minScore
        self.minAreaFraction = minAreaFraction
        self.fill = fill
        self.eyeLevel = eyeLevel
    }
}

/// What the face rule chose: the square to plan (a pixel rectangle, clamped by `CropGeometry.plan` as any
/// request's) and the faces it was chosen for.
public struct FaceChoice: Sendable, Hashable, Codable {
    /// `.rect` in oriented source pixels, without a reference.
    public var input: CropInput
    /// Indices, in the order given, of the faces the square frames.
    public var kept: [Int]
    /// The kept faces did not fit in any square of the photo together: the square frames the largest face only.
    public var largestOnly: Bool

    public init(input: CropInput, kept: [Int], largestOnly: Bool) {
        self.input = input
        self.kept = kept
        self.largestOnly = largestOnly
    }
}

extension CropGeometry {
    /// The face rule: keep the faces scoring at least `rule.minScore` whose area is at least
    /// `rule.minAreaFraction` of the largest's; a square whose side is their union's larger extent over
    /// `rule.fill` (at most the photo's short side), centred on the union across, and down so the mean eye line
    /// sits at `rule.eyeLevel` of the side (without eyes: centred on the union), the union kept inside. When the
    /// union is wider or taller than the photo's short side, the largest face alone. `nil` when no face counts:
    /// the caller plans `.centred`, exactly as without the rule. Boxes are clipped to the photo first; boxes that
    /// are not finite or not positive are ignored.
    public static func faceChoice(faces: [FaceBox], source: PixelSize, rule: FaceRule = FaceRule()) -> FaceChoice? {
        guard source.width > 0, source.height > 0, rule.fill > 0, rule.fill <= 1, rule.eyeLevel.isFinite else {
            return nil
        }
        let width = Double(source.width)
        let height = Double(source.height)
        var candidates: [(index: Int, box: Box, eyeY: Double?)] = []
        for (index, face) in faces.enumerated() {
            let values = [face.x, face.y, face.width, face.height, face.score]
            guard values.allSatisfy(\.isFinite), face.width > 0, face.height > 0, face.score >= rule.minScore else {
                continue
            }
            let box = Box(
                minX: max(face.x, 0), minY: max(face.y, 0), maxX: min(face.x + face.width, width),
                maxY: min(face.y + face.height, height))
            guard box.maxX > box.minX, box.maxY > box.minY else { continue }
            candidates.append((index, box, eyeLine(face)))
        }
        guard let largestArea = candidates.map(\.box.area).max() else { return nil }
        var kept = candidates.filter { $0.box.area >= rule.minAreaFraction * largestArea }
        let shortSide = min(width, height)
        var union = kept.dropFirst().reduce(kept[0].box) { $0.union($1.box) }
        var largestOnly = false
        if max(union.width, union.height) > shortSide {
            // The first of the largest, so equal areas choose the same face every time.
            let largest = kept.first { $0.box.area == largestArea } ?? kept[0]
            kept = [largest]
            union = largest.box
            largestOnly = true
        }
        let side = min(max(union.width, union.height) / rule.fill, shortSide)
        let eyes = kept.compactMap(\.eyeY)
        var centreY = (union.minY + union.maxY) / 2
        if eyes.count == kept.count {
            let eyeY = eyes.reduce(0, +) / Double(eyes.count)
            centreY = eyeY + (0.5 - rule.eyeLevel) * side
            // The union stays inside the square (it fits: its height is at most the side).
            centreY = min(max(centreY, union.maxY - side / 2), union.minY + side / 2)
        }
        let centreX = (union.minX + union.maxX) / 2
        return FaceChoice(
            input: .rect(PixelRect(x: centreX - side / 2, y: centreY - side / 2, side: side), reference: nil),
            kept: kept.map(\.index), largestOnly: largestOnly)
    }

    /// The pose the editor would show for `plan` (zoom and offsets in points, on the plan's source): what the app
    /// opens its editor on to let the user move a square the server chose.
    public static func pose(of plan: CropPlan, settings: EditorSettings = EditorSettings()) -> EditorPose {
        let sigma = settings.screenScale
        let scale = plan.scaleApplied
        let centreX = plan.crop.x + plan.crop.side / 2
        let centreY = plan.crop.y + plan.crop.side / 2
        return EditorPose(
            scale: scale, tx: (Double(plan.source.width) / 2 - centreX) * scale / sigma,
            ty: (Double(plan.source.height) / 2 - centreY) * scale / sigma)
    }

    /// The mean height of a face's eyes, if it has finite ones.
    private static func eyeLine(_ face: FaceBox) -> Double? {
        guard let right = face.rightEye, let left = face.leftEye, right.y.isFinite, left.y.isFinite else { return nil }
        return (right.y + left.y) / 2
    }
}

/// An axis-aligned box in oriented source pixels (the rule's arithmetic only).
private struct Box {
    var minX: Double
    var minY: Double
    var maxX: Double
    var maxY: Double

    var width: Double { maxX - minX }
    var height: Double { maxY - minY }
    var area: Double { width * height }

    func union(_ other: Box) -> Box {
        Box(
            minX: min(minX, other.minX), minY: min(minY, other.minY), maxX: max(maxX, other.maxX),
            maxY: max(maxY, other.maxY))
    }
}
