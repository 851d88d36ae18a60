import CropGeometry

/// One image and its pose mix, as driver.py writes it. The same file feeds `avatar-bench plan`
/// (which fills in `crop` and the resolved `input`) and every renderer's `run`.
struct Job: Codable {
    var image: String
    var runs: Int
    var warmup: Int?
    var output: Int?
    var poses: [PoseJob]
}

struct PoseJob: Codable {
    var name: String
    /// The pose mix entry, relative to the image's zoom and pan limits (see `PoseSpec`).
    var spec: PoseSpec
    /// The request the worker would receive: filled in by `plan`.
    var input: InputJSON?
    /// The plan's crop in oriented source pixels: filled in by `plan`, used by every implementation.
    var crop: CropJSON?
}

/// A realistic editor pose described relative to the image, so one mix fits every size.
struct PoseSpec: Codable {
    /// "centred", "pose" or "rect".
    var kind: String
    /// pose: 0 = s_min, 1 = s_max, interpolated geometrically (a pinch multiplies the zoom).
    var zoom: Double?
    /// pose: offsets as a fraction (−1…1) of the pan limit at that zoom; + moves the image right/down.
    var panX: Double?
    var panY: Double?
    /// pose/rect: the app computed the pose on a display thumbnail with this long edge.
    var referenceLongEdge: Int?
    /// rect: side as a fraction of the oriented short side, centre as fractions of width and height.
    var side: Double?
    var centreX: Double?
    var centreY: Double?
}

struct InputJSON: Codable {
    var kind: String
    var scale: Double?
    var tx: Double?
    var ty: Double?
    var x: Double?
    var y: Double?
    var side: Double?
    var referenceWidth: Int?
    var referenceHeight: Int?

    var cropInput: CropInput {
        let reference = referenceWidth.flatMap { w in referenceHeight.map { PixelSize(width: w, height: $0) } }
        switch kind {
        case "pose":
            return .pose(EditorPose(scale: scale ?? 0, tx: tx ?? 0, ty: ty ?? 0), reference: reference)
        case "rect":
            return .rect(PixelRect(x: x ?? 0, y: y ?? 0, side: side ?? 0), reference: reference)
        default:
            return .centred
        }
    }
}

struct CropJSON: Codable, Equatable {
    var x: Int
    var y: Int
    var side: Int

    init(_ crop: PixelCrop) {
        x = crop.x
        y = crop.y
        side = crop.side
    }
}
