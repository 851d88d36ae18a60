import CropGeometry

/// What the face rule saw and did for a request without a pose (docs/ARCHITECTURE.md §2, "Faces"). Present on
/// a render only when faces were looked for: no pose and `RenderOptions.defaultCrop == .face`.
public struct FaceReport: Sendable, Hashable, Codable {
    /// The faces found (scoring at least the rule's `minScore`), best first, in oriented source pixels.
    public var faces: [FaceBox]
    /// Indices into `faces` of the faces the square frames; empty when the rule was not used.
    public var kept: [Int]
    /// The square is the face rule's; `false`: the centred square (no face counted, or detection failed).
    public var ruleUsed: Bool
    /// The kept faces did not fit in one square together: the square frames the largest only.
    public var largestOnly: Bool
    /// The upright size of the image handed to the detector, which fits it onto its canvas: the job's shared frame
    /// (`FaceFrame`) or the format's cheapest small decode.
    public var detectionSize: PixelSize
    /// The small decode and the detection together.
    public var time: Duration
    /// The detector alone (the image fitted and turned onto the network's canvas, the network, its outputs
    /// decoded): `time` without the small decode.
    public var detectorTime: Duration
    /// Why faces could not be looked for; the square is then the centred one.
    public var error: FaceDetectionError.Code?

    public init(
        faces: [FaceBox], kept: [Int], ruleUsed: Bool, largestOnly: Bool, detectionSize: PixelSize, time: Duration,
        detectorTime: Duration = .zero, error: FaceDetectionError.Code?
    ) {
        self.faces = faces
        self.kept = kept
        self.ruleUsed = ruleUsed
        self.largestOnly = largestOnly
        self.detectionSize = detectionSize
        self.time = time
        self.detectorTime = detectorTime
        self.error = error
    }

    /// `time` in milliseconds.
    public var milliseconds: Double { time.milliseconds }

    /// `detectorTime` in milliseconds.
    public var detectorMilliseconds: Double { detectorTime.milliseconds }

    /// The best face's score (0 without a face).
    public var bestScore: Double { faces.map(\.score).max() ?? 0 }
}
