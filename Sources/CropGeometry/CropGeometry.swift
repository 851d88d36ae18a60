/// The editor's crop math (docs/ARCHITECTURE.md §1): the server re-applies the app's clamps to
/// the pose it receives and never trusts the client's rectangle.
public enum CropGeometry {
    /// Largest relative difference between the reference and source aspect ratios
    /// still taken as the same image (beyond the unavoidable rounding of a thumbnail's sides).
    public static let aspectTolerance = 0.01

    /// Plans the crop of an oriented source of size `source` for `input`.
    public static func plan(
        source: PixelSize,
        input: CropInput,
        settings: EditorSettings = EditorSettings()
    ) throws(CropGeometryError) -> CropPlan {
        try validate(settings)
        guard source.width > 0, source.height > 0 else {
            throw CropGeometryError(.invalidSize, "source size must be positive")
        }
        let bounds = ZoomBounds(source: source, settings: settings)
        switch input {
        case .centred:
            return finish(bounds, requested: nil, pose: EditorPose(scale: bounds.sMin), settings: settings)
        case .pose(let pose, let reference):
            guard pose.scale.isFinite, pose.scale > 0, pose.tx.isFinite, pose.ty.isFinite else {
                throw CropGeometryError(.invalidPose, "zoom must be a positive number and offsets finite")
            }
            let factor = try referenceFactor(reference, source: source)
            // The same on-screen display at a higher resolution needs a proportionally smaller zoom;
            // offsets are in points and do not change.
            let mapped = EditorPose(scale: pose.scale * factor, tx: pose.tx, ty: pose.ty)
            return finish(bounds, requested: mapped.scale, pose: mapped, settings: settings)
        case .rect(let rect, let reference):
            guard rect.x.isFinite, rect.y.isFinite, rect.side.isFinite, rect.side > 0 else {
                throw CropGeometryError(.invalidPose, "rectangle must be finite with a positive side")
            }
            let factor = try referenceFactor(reference, source: source)
            // In source pixels, then as the pose that shows this square. A square that is too small
            // or too large keeps its centre: the zoom is clamped before the offsets are derived.
            let side = rect.side / factor
            let centreX = (rect.x + rect.side / 2) / factor
            let centreY = (rect.y + rect.side / 2) / factor
            let sigma = settings.screenScale
            let requested = settings.maskDiameter * sigma / side
            let scale = bounds.clamp(requested)
            let pose = EditorPose(
                scale: scale,
                tx: (Double(source.width) / 2 - centreX) * scale / sigma,
                ty: (Double(source.height) / 2 - centreY) * scale / sigma
            )
            return finish(bounds, requested: requested, pose: pose, settings: settings)
        }
    }

    /// The zoom bounds of docs/ARCHITECTURE.md §1 for a source, without any pose.
    public static func bounds(source: PixelSize, settings: EditorSettings = EditorSettings())
        throws(CropGeometryError) -> (sMin: Double, sQuality: Double, sMax: Double)
    {
        try validate(settings)
        guard source.width > 0, source.height > 0 else {
            throw CropGeometryError(.invalidSize, "source size must be positive")
        }
        let bounds = ZoomBounds(source: source, settings: settings)
        return (bounds.sMin, bounds.sQuality, bounds.sMax)
    }

    // MARK: - Steps

    private static func validate(_ settings: EditorSettings) throws(CropGeometryError) {
        let positive = [settings.screenScale, settings.maskDiameter, settings.qualityMultiplier]
        guard positive.allSatisfy({ $0.isFinite && $0 > 0 }), settings.outputSize > 0,
            settings.maxZoomMultiplier.isFinite, settings.maxZoomMultiplier >= 1,
            settings.minPixelPerPoint.isFinite
        else {
            throw CropGeometryError(.invalidSettings, "editor settings must be positive and finite")
        }
    }

    /// Source pixels per reference pixel, inverted: `reference / source` (1 without a reference).
    private static func referenceFactor(_ reference: PixelSize?, source: PixelSize) throws(CropGeometryError) -> Double
    {
        guard let reference else { return 1 }
        guard reference.width > 0, reference.height > 0 else {
            throw CropGeometryError(.invalidSize, "reference size must be positive")
        }
        let sourceAspect = Double(source.width) / Double(source.height)
        let referenceAspect = Double(reference.width) / Double(reference.height)
        // A thumbnail's sides are rounded to whole pixels: allow that on top of the tolerance.
        let rounding = 1 / Double(min(reference.width, reference.height))
        guard abs(referenceAspect / sourceAspect - 1) <= aspectTolerance + rounding else {
            throw CropGeometryError(.aspectMismatch, "the pose was computed for an image of another shape")
        }
        return Double(reference.width) / Double(source.width)
    }

    private static func finish(
        _ bounds: ZoomBounds, requested: Double?, pose: EditorPose, settings: EditorSettings
    ) -> CropPlan {
        let sigma = settings.screenScale
        let diameter = settings.maskDiameter
        let width = Double(bounds.source.width)
        let height = Double(bounds.source.height)

        let scale = bounds.clamp(pose.scale)
        // Pan clamp: the displayed image must still cover the mask on every side.
        let limitX = max(0, ((width / sigma) * scale - diameter) / 2)
        let limitY = max(0, ((height / sigma) * scale - diameter) / 2)
        let tx = min(max(pose.tx, -limitX), limitX)
        let ty = min(max(pose.ty, -limitY), limitY)

        // Never wider than the short side, whatever floating point did to `scale`.
        let side = min(diameter * sigma / scale, width, height)
        let centreX = width / 2 - tx * sigma / scale
        let centreY = height / 2 - ty * sigma / scale
        let crop = CropSquare(x: centreX - side / 2, y: centreY - side / 2, side: side)

        let zoomClamped = requested.map { abs(scale - $0) > 1e-9 * max(1, $0) } ?? false
        let density = sigma / bounds.sMin
        return CropPlan(
            source: bounds.source,
            sMin: bounds.sMin,
            sQuality: bounds.sQuality,
            sMax: bounds.sMax,
            scaleRequested: requested,
            scaleApplied: scale,
            zoomClamped: zoomClamped,
            qualityClamped: zoomClamped && (requested ?? 0) > bounds.sMax && bounds.qualityBound,
            qualityLimited: bounds.qualityLimited,
            panClamped: abs(tx - pose.tx) > 1e-6 || abs(ty - pose.ty) > 1e-6,
            density: density,
            lowDensity: density < settings.minPixelPerPoint,
            crop: crop,
            pixelCrop: pixelCrop(crop, source: bounds.source)
        )
    }

    /// Rounds a square to whole pixels and keeps it inside the source.
    static func pixelCrop(_ crop: CropSquare, source: PixelSize) -> PixelCrop {
        let side = max(1, min(Int(crop.side.rounded()), source.width, source.height))
        let x = min(max(Int(crop.x.rounded()), 0), source.width - side)
        let y = min(max(Int(crop.y.rounded()), 0), source.height - side)
        return PixelCrop(x: x, y: y, side: side)
    }
}

/// `s_min`, `s_quality`, `s_max` for one source (docs/ARCHITECTURE.md §1).
struct ZoomBounds {
    let source: PixelSize
    let sMin: Double
    let sQuality: Double
    let sMax: Double
    /// `s_quality` is the bound that decides `s_max` (not the zoom multiplier).
    let qualityBound: Bool
    /// Even the minimum zoom cannot meet the quality target: `s_max` was raised to `s_min`.
    let qualityLimited: Bool

    init(source: PixelSize, settings: EditorSettings) {
        let sigma = settings.screenScale
        let diameter = settings.maskDiameter
        self.source = source
        sMin = max(diameter / (Double(source.width) / sigma), diameter / (Double(source.height) / sigma))
        sQuality = diameter * sigma / (Double(settings.outputSize) * settings.qualityMultiplier)
        let zoomLimit = sMin * settings.maxZoomMultiplier
        qualityBound = sQuality < zoomLimit
        qualityLimited = sQuality < sMin
        sMax = max(min(zoomLimit, sQuality), sMin)
    }

    func clamp(_ scale: Double) -> Double { min(max(scale, sMin), sMax) }
}
