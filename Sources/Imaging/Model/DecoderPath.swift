/// Which decoder produced a render's pixels (docs/ARCHITECTURE.md §2 step 3).
public enum DecoderPath: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Only the crop's region of a JPEG, through libjpeg: rows above skipped without the inverse
    /// DCT, only the columns that cover the crop, nothing below its last row.
    case jpegRegion
    /// Only the grid tiles of a HEIF/AVIF image that the crop touches, through libheif (a non-grid
    /// image whole), untransformed.
    case heifRegion
    /// libvips' loader for the format (whole rows down to the crop's last one), and why the region
    /// decoder did not run. `DecoderSelection` decides; its documentation says why each case falls back.
    case libvips(LibvipsReason)

    public enum LibvipsReason: String, Sendable, Hashable, CaseIterable, Codable {
        /// PNG, WebP, GIF or TIFF: formats with only libvips' loader.
        case notJPEG = "not-jpeg"
        /// A HEIF layout the HEIF region decoder leaves to libvips: a clean-aperture crop (`clap`), or a
        /// grid with an alpha plane.
        case heifLayout = "heif-layout"
        /// Progressive or otherwise multi-scan.
        case multiScan = "multi-scan"
        /// CMYK or YCCK (Adobe-inverted ink included).
        case cmyk = "cmyk"
        /// Arithmetic entropy coding.
        case arithmeticCoding = "arithmetic-coding"
        /// Samples of other than 8 bits (12-bit, lossless).
        case precision = "precision"
        /// Neither grey nor YCbCr/RGB (2 components, unknown transforms).
        case colourSpace = "colour-space"
        /// libjpeg (libheif) could not read the header that libvips read, or read different dimensions.
        case header = "header"
        /// The region would be a large buffer; libvips streams it in strips instead.
        case largeRegion = "large-region"
        /// The render's options asked for libvips (comparisons and benchmarks).
        case requested = "requested"
    }

    /// "jpeg-region", "heif-region", or "libvips:" and the reason ("libvips:multi-scan").
    public var description: String {
        switch self {
        case .jpegRegion: "jpeg-region"
        case .heifRegion: "heif-region"
        case .libvips(let reason): "libvips:\(reason.rawValue)"
        }
    }

    public var isJPEGRegion: Bool { self == .jpegRegion }

    /// One of the region decoders (JPEG or HEIF).
    public var isRegion: Bool { self == .jpegRegion || self == .heifRegion }
}

/// Which decoders a render may use. Tests and benchmarks force libvips to compare the two on the
/// same request; production renders leave it automatic.
@_spi(Benchmark) public enum DecoderPreference: String, Sendable, Hashable, CaseIterable, Codable {
    /// The region decoder where `DecoderSelection` allows it, libvips elsewhere.
    case automatic
    /// libvips for every file.
    case libvips
}
