// Value types shared by the crop math, the renderer and the wire protocol.
// This module has no dependencies (not even Foundation) so an app can link
// the very same code the worker runs.

/// A size in pixels.
public struct PixelSize: Sendable, Hashable, Codable {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}

/// The editor's fixed parameters (docs/ARCHITECTURE.md §1). Defaults match the app: a 320 pt
/// mask (0.82 of a 390 pt wide screen) on a 3× screen, 512 px output.
public struct EditorSettings: Sendable, Hashable, Codable {
    /// Screen scale σ: pixels per point on the device that showed the editor.
    public var screenScale: Double
    /// Mask diameter in points (Dpt).
    public var maskDiameter: Double
    /// Side of the published avatar in pixels.
    public var outputSize: Int
    /// The visible square must hold at least `outputSize · qualityMultiplier` source pixels.
    public var qualityMultiplier: Double
    /// The user may zoom to at most `s_min · maxZoomMultiplier`.
    public var maxZoomMultiplier: Double
    /// Below this many source pixels per point at minimum zoom, the plan is flagged `lowDensity`.
    public var minPixelPerPoint: Double

    public init(
        screenScale: Double = 3,
        maskDiameter: Double = 320,
        outputSize: Int = 512,
        qualityMultiplier: Double = 1.25,
        maxZoomMultiplier: Double = 4,
        minPixelPerPoint: Double = 1
    ) {
        self.screenScale = screenScale
        self.maskDiameter = maskDiameter
        self.outputSize = outputSize
        self.qualityMultiplier = qualityMultiplier
        self.maxZoomMultiplier = maxZoomMultiplier
        self.minPixelPerPoint = minPixelPerPoint
    }
}

/// The editor's pose: zoom `scale` and the image's offset from the mask centre
/// (`tx`, `ty`, in points, positive moves the image right / down).
public struct EditorPose: Sendable, Hashable, Codable {
    public var scale: Double
    public var tx: Double
    public var ty: Double

    public init(scale: Double, tx: Double = 0, ty: Double = 0) {
        self.scale = scale
        self.tx = tx
        self.ty = ty
    }
}

/// A square given directly in pixels: top-left corner and side.
public struct PixelRect: Sendable, Hashable, Codable {
    public var x: Double
    public var y: Double
    public var side: Double

    public init(x: Double, y: Double, side: Double) {
        self.x = x
        self.y = y
        self.side = side
    }
}

/// What a request says about the crop. `reference` is the (oriented) image size
/// the pose or rectangle was computed against, e.g. the app's display thumbnail;
/// `nil` means the full-resolution source itself.
public enum CropInput: Sendable, Hashable, Codable {
    /// No pose: the centred square at minimum zoom.
    case centred
    case pose(EditorPose, reference: PixelSize?)
    case rect(PixelRect, reference: PixelSize?)
}

/// A square in oriented source pixels (top-left corner and side), unrounded.
public struct CropSquare: Sendable, Hashable, Codable {
    public var x: Double
    public var y: Double
    public var side: Double

    public init(x: Double, y: Double, side: Double) {
        self.x = x
        self.y = y
        self.side = side
    }
}

/// A square in whole oriented source pixels, always inside the source.
public struct PixelCrop: Sendable, Hashable, Codable {
    public var x: Int
    public var y: Int
    public var side: Int

    public init(x: Int, y: Int, side: Int) {
        self.x = x
        self.y = y
        self.side = side
    }
}

/// Why a crop could not be planned.
public struct CropGeometryError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The reference size's aspect ratio does not match the source: pose and file do not belong together.
        case aspectMismatch = "aspect_mismatch"
        /// Zoom, offsets or rectangle are not finite or not positive where they must be.
        case invalidPose = "invalid_pose"
        /// The source or reference size is not positive.
        case invalidSize = "invalid_size"
        /// The editor settings are not usable (non-positive scale, mask or output size).
        case invalidSettings = "invalid_settings"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "CropGeometryError(\(code.rawValue)): \(message)" }
}
