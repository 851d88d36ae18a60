import CropGeometry

/// The accepted input formats (docs/ARCHITECTURE.md §2): anything else is `unsupportedFormat`.
public enum ImageFormat: String, Sendable, Hashable, CaseIterable, Codable {
    case jpeg, png, webp
    /// HEIC and AVIF (libheif).
    case heif
    /// The first frame only.
    case gif
    case tiff
}

/// What the header says about an image, read without decoding pixels.
public struct ImageHeader: Sendable, Hashable, Codable {
    public var format: ImageFormat
    /// Size as stored in the file (before EXIF orientation).
    public var storedSize: PixelSize
    /// EXIF orientation 1–8 (1 when absent or invalid, and for HEIF, whose rotation libheif applies).
    public var orientation: Int
    /// Size as displayed, after orientation: what the crop math works on.
    public var orientedSize: PixelSize
    public var bands: Int
    public var hasAlpha: Bool
    /// Bits per sample (8 or 16 for photos).
    public var bitDepth: Int
    /// libvips' interpretation: "srgb", "b-w", "cmyk", "rgb16", "grey16", ...
    public var interpretation: String
    public var hasICCProfile: Bool
    /// Progressive JPEG or interlaced PNG: the decoder holds the whole image in memory.
    public var interlaced: Bool
    /// Size of the encoded file.
    public var byteCount: Int
    /// The decoder this file allows (`DecoderSelection.fileDecoder`, the one answer): `.jpegRegion` for
    /// a baseline 8-bit JPEG in grey or RGB, `.heifRegion` for a HEIF/AVIF libheif lays out, else
    /// libvips and why. A render may still use libvips (`RenderResult.decoder`).
    public var decoder: DecoderPath
    /// For `.heifRegion`: the primary image's stored size, transformations and tiling.
    var heifLayout: HEIFRegionDecoder.Layout?

    /// What crosses a render helper's channel (RenderHelpers): everything but the HEIF layout, which only
    /// the process that decodes needs.
    private enum CodingKeys: String, CodingKey {
        case format, storedSize, orientation, orientedSize, bands, hasAlpha, bitDepth, interpretation, hasICCProfile
        case interlaced, byteCount, decoder
    }

    /// `HeaderReader` makes headers; tests make them for `MemoryAdmission` and `DecoderSelection`.
    init(
        format: ImageFormat, storedSize: PixelSize, orientation: Int, bands: Int, hasAlpha: Bool, bitDepth: Int,
        interpretation: String, hasICCProfile: Bool, interlaced: Bool = false, byteCount: Int,
        decoder: DecoderPath, heifLayout: HEIFRegionDecoder.Layout? = nil
    ) {
        self.format = format
        self.storedSize = storedSize
        self.orientation = Orientation(exif: orientation).rawValue
        self.orientedSize = Orientation(exif: orientation).orientedSize(of: storedSize)
        self.bands = bands
        self.hasAlpha = hasAlpha
        self.bitDepth = bitDepth
        self.interpretation = interpretation
        self.hasICCProfile = hasICCProfile
        self.interlaced = interlaced
        self.byteCount = byteCount
        self.decoder = decoder
        self.heifLayout = heifLayout
    }
}
