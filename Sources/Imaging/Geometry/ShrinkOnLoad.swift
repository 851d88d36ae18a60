import CropGeometry

/// Shrink-on-load (docs/ARCHITECTURE.md §2 step 3): decode fewer pixels when the crop has more than
/// needed. libjpeg and libwebp decode smaller; HEIF is box-shrunk by the same factors as it is copied
/// (the region decoder shrinks each tile's overlap, libvips' path the loaded image), so both decoders
/// cut the same square from the same shrunk image.
enum ShrinkOnLoad {
    /// The factors libjpeg can decode at (DCT scaling); WebP uses the same for simplicity.
    static let factors = [8, 4, 2, 1]

    /// Whether the format's loader can decode at a reduced size.
    static func supportsShrink(_ format: ImageFormat) -> Bool {
        format == .jpeg || format == .webp
    }

    /// Whether the format is shrunk by an integer box as it is decoded (`boxShrunkSize`).
    static func boxShrinks(_ format: ImageFormat) -> Bool {
        format == .heif
    }

    /// The largest factor that leaves the crop at least `required` pixels wide: `cropSide / f ≥ required`.
    static func factor(format: ImageFormat, cropSide: Double, required: Int) -> Int {
        guard supportsShrink(format) || boxShrinks(format) else { return 1 }
        return factors.first { cropSide / Double($0) >= Double(required) } ?? 1
    }

    /// The fallback's factor: the smallest that brings the long edge to at most `longEdge × 1.25`
    /// (so a decode's long edge lands around 2 000–3 200 px for the default 2560), and never less
    /// than the full-resolution path would use. A box shrink saves no decode (HEIF's fallback is its
    /// thumbnail item, or the same factor).
    static func fallbackFactor(format: ImageFormat, stored: PixelSize, longEdge: Int, fullFactor: Int) -> Int {
        guard supportsShrink(format) else { return fullFactor }
        let edge = Double(max(stored.width, stored.height))
        let limit = Double(longEdge) * 1.25
        let factor = factors.reversed().first { edge / Double($0) <= limit } ?? factors[0]
        return max(factor, fullFactor)
    }

    /// The WebP decode scale for a fallback: exactly `longEdge / edge` (WebP scales continuously).
    static func fallbackWebPScale(stored: PixelSize, longEdge: Int, fullFactor: Int) -> Double {
        let edge = Double(max(stored.width, stored.height))
        return min(1 / Double(fullFactor), min(1, Double(longEdge) / edge))
    }

    /// The decoded size for a factor: libjpeg rounds up.
    static func decodedSize(_ stored: PixelSize, factor: Int) -> PixelSize {
        PixelSize(width: (stored.width + factor - 1) / factor, height: (stored.height + factor - 1) / factor)
    }

    /// The size libvips' jpegload gives for a factor: libjpeg's output cut to whole source pixels
    /// (rounded down, so no partly covered column or row at the right and bottom). The region
    /// decoder maps the crop onto this same size, so both decoders cut the same square.
    static func jpegLoadedSize(_ stored: PixelSize, factor: Int) -> PixelSize {
        PixelSize(width: stored.width / factor, height: stored.height / factor)
    }

    /// The image an integer box shrink gives: whole boxes only (libvips' shrink also rounds a last,
    /// partial box up; the pipeline cuts it off so that both HEIF decoders map the crop alike).
    static func boxShrunkSize(_ stored: PixelSize, factor: Int) -> PixelSize {
        PixelSize(width: stored.width / factor, height: stored.height / factor)
    }
}
