/// What the renderer accepts, checked before any pixel is decoded.
public struct ImageLimits: Sendable, Hashable {
    /// Largest encoded file, in bytes.
    public var maxBytes: Int
    /// Largest stored `width × height` (decompression bombs declare huge sizes in tiny files).
    public var maxPixels: Int
    /// Smallest accepted shorter side, in pixels.
    public var minSide: Int

    /// The defaults, stated here only (`image.max-mb` and `image.max-megapixels` take theirs from these).
    public static let defaultMaxMiB = 40
    public static let defaultMaxMegapixels = 100
    public static let defaultMinSide = 320

    public init(
        maxBytes: Int = defaultMaxMiB * 1024 * 1024, maxPixels: Int = defaultMaxMegapixels * 1_000_000,
        minSide: Int = defaultMinSide
    ) {
        self.maxBytes = maxBytes
        self.maxPixels = maxPixels
        self.minSide = minSide
    }
}
