/// What the renderer accepts, checked before any pixel is decoded.
public struct ImageLimits: Sendable, Hashable {
    /// Largest encoded file, in bytes.
    public var maxBytes: Int
    /// Largest stored `width × height` (decompression bombs declare huge sizes in tiny files).
    public var maxPixels: Int
    /// Smallest accepted shorter side, in pixels.
    public var minSide: Int

    public init(maxBytes: Int = 40 * 1024 * 1024, maxPixels: Int = 100_000_000, minSide: Int = 320) {
        self.maxBytes = maxBytes
        self.maxPixels = maxPixels
        self.minSide = minSide
    }
}
