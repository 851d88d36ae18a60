/// Everything the crop math decided for one job (docs/ARCHITECTURE.md §1), in oriented source pixels.
public struct CropPlan: Sendable, Hashable, Codable {
    /// The oriented source size the plan was computed for.
    public var source: PixelSize
    /// Smallest zoom that covers the mask (no blank space).
    public var sMin: Double
    /// Largest zoom that keeps `outputSize · qualityMultiplier` source pixels in the mask.
    public var sQuality: Double
    /// Largest zoom allowed: `min(sMin · maxZoomMultiplier, sQuality)`, never below `sMin`.
    public var sMax: Double
    /// The zoom the request asked for (mapped onto the source); `nil` for a centred crop.
    public var scaleRequested: Double?
    /// The zoom after clamping to `[sMin, sMax]`.
    public var scaleApplied: Double
    /// The requested zoom was outside `[sMin, sMax]` and was clamped.
    public var zoomClamped: Bool
    /// The zoom was clamped down by the quality limit (`sQuality` was the binding bound).
    public var qualityClamped: Bool
    /// The source is too small to meet the quality target even at minimum zoom (`sQuality < sMin`).
    public var qualityLimited: Bool
    /// The offsets would have shown blank space and were clamped.
    public var panClamped: Bool
    /// Source pixels per point at minimum zoom: `screenScale / sMin`.
    public var density: Double
    /// `density` is below `minPixelPerPoint`.
    public var lowDensity: Bool
    /// The visible square, unrounded.
    public var crop: CropSquare
    /// The visible square in whole pixels, inside the source.
    public var pixelCrop: PixelCrop

    public init(
        source: PixelSize, sMin: Double, sQuality: Double, sMax: Double, scaleRequested: Double?,
        scaleApplied: Double, zoomClamped: Bool, qualityClamped: Bool, qualityLimited: Bool, panClamped: Bool,
        density: Double, lowDensity: Bool, crop: CropSquare, pixelCrop: PixelCrop
    ) {
        self.source = source
        self.sMin = sMin
        self.sQuality = sQuality
        self.sMax = sMax
        self.scaleRequested = scaleRequested
        self.scaleApplied = scaleApplied
        self.zoomClamped = zoomClamped
        self.qualityClamped = qualityClamped
        self.qualityLimited = qualityLimited
        self.panClamped = panClamped
        self.density = density
        self.lowDensity = lowDensity
        self.crop = crop
        self.pixelCrop = pixelCrop
    }
}
