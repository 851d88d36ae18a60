/// What the renderer accepts, checked before any pixel is decoded.
public struct ImageLimits: Sendable, Hashable, Codable {
    /// Largest encoded file, in bytes.
    public var maxBytes: Int
    /// Largest stored `width × height` (decompression bombs declare huge sizes in tiny files).
    public var maxPixels: Int
    /// Smallest accepted shorter side, in pixels.
    public var minSide: Int
    /// Most scans a JPEG may have. Each scan of a progressive JPEG is another pass over the whole
    /// coefficient buffer inside one libjpeg call that no deadline can stop (docs/ARCHITECTURE.md §7):
    /// a 16 MP file with 704 scans decodes 11× slower than with a normal script. Encoders write
    /// 1 (baseline) to about 10–20 (libjpeg's default progression has 10 for colour); 100 is
    /// also where libjpeg-turbo's own scan-script reader (`jpegtran -scans`) stops.
    public var maxJPEGScans: Int

    /// The defaults, stated here only (`image.max-mb` and `image.max-megapixels` take theirs from these).
    public static let defaultMaxMiB = 40
    public static let defaultMaxMegapixels = 100
    public static let defaultMinSide = 320
    public static let defaultMaxJPEGScans = 100

    public init(
        maxBytes: Int = defaultMaxMiB * 1024 * 1024, maxPixels: Int = defaultMaxMegapixels * 1_000_000,
        minSide: Int = defaultMinSide, maxJPEGScans: Int = defaultMaxJPEGScans
    ) {
        self.maxBytes = maxBytes
        self.maxPixels = maxPixels
        self.minSide = minSide
        self.maxJPEGScans = maxJPEGScans
    }
}
