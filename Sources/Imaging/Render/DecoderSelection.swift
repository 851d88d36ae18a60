import CropGeometry

/// Which decoder renders a file's pixels (docs/ARCHITECTURE.md §2 step 3): the one place that decides.
///
/// The region decoder (`JPEGRegionDecoder`, libjpeg's API) decodes only the crop's square: rows above
/// it skipped without the inverse DCT, only the iMCU columns that cover it, nothing below its last
/// row. It runs for **baseline (single-scan), Huffman-coded, 8-bit JPEGs in grey, YCbCr or RGB** —
/// what cameras and phones write. Its pixels are libjpeg's, at the same DCT scale and with the same
/// upsampling as libvips' jpegload, so the square is the same either way. Everything else takes
/// libvips' loader, as before, for these reasons (`DecoderPath.LibvipsReason`):
///
/// - `.notJPEG` — PNG, WebP, HEIF, GIF and TIFF have only libvips' loaders.
/// - `.multiScan` — progressive (or multi-scan sequential) JPEG: libjpeg entropy-decodes and buffers
///   every coefficient of the whole image before the first row comes out, whatever the region, so
///   a region would save only the inverse DCT of a (usually shrunk) decode while holding the same
///   whole-image buffer; libvips' path does exactly that already.
/// - `.cmyk` — CMYK and YCCK, including Adobe's inverted ink: libvips inverts Adobe CMYK and imports
///   it through a CMYK profile; one implementation of that is enough for files this rare.
/// - `.arithmeticCoding` — rare enough that it keeps the path it has always had.
/// - `.precision` — 12-bit and lossless JPEG: libjpeg-turbo's 8-bit API cannot decode them, and
///   libvips then fails them with the error they always had.
/// - `.colourSpace` — any other component count or transform (2 components, unknown colour spaces).
/// - `.header` — libjpeg cannot read a header libvips read, or reads another size: libvips decides
///   what the file is (and which error it gets).
/// - `.largeRegion` — the region is held whole in memory, libvips streams strips: past
///   `maxRegionPixels` (only reachable with large extra sizes) libvips needs less memory.
/// - `.requested` — the render's options ask for libvips (comparisons, benchmarks).
///
/// The memory fallback (`fallback`, thumbnail resolution) uses the region decoder too: it is the
/// same libjpeg decode at a larger DCT scale, and a region needs less memory than whole rows, which
/// is the point of the fallback.
enum DecoderSelection {
    /// Largest region the region decoder holds in memory (16 MP: 48 MiB of RGB).
    static let maxRegionPixels = 16 * 1024 * 1024

    /// The decoder the file allows, from libvips' header and libjpeg's (`jpeg` nil when libjpeg
    /// could not read it). Fixed per file: `HeaderReader` stores it in `ImageHeader.decoder`.
    static func fileDecoder(format: ImageFormat, size: PixelSize, jpeg: JPEGRegionDecoder.Header?) -> DecoderPath {
        guard format == .jpeg else { return .libvips(.notJPEG) }
        guard let jpeg, jpeg.size == size else { return .libvips(.header) }
        if jpeg.precision != 8 { return .libvips(.precision) }
        if jpeg.colour == .cmyk || jpeg.colour == .ycck || jpeg.components == 4 { return .libvips(.cmyk) }
        if jpeg.multiScan { return .libvips(.multiScan) }
        if jpeg.arithmeticCoding { return .libvips(.arithmeticCoding) }
        switch (jpeg.colour, jpeg.components) {
        case (.grey, 1), (.yCbCr, 3), (.rgb, 3): return .jpegRegion
        default: return .libvips(.colourSpace)
        }
    }

    /// What a header made without libjpeg's view (`ImageHeader`'s initialiser) assumes, from libvips'
    /// fields alone: the same answer as `fileDecoder` for the files cameras write.
    static func assumedDecoder(format: ImageFormat, interpretation: String, bitDepth: Int, interlaced: Bool)
        -> DecoderPath
    {
        guard format == .jpeg else { return .libvips(.notJPEG) }
        if bitDepth != 8 { return .libvips(.precision) }
        if interpretation == "cmyk" { return .libvips(.cmyk) }
        if interlaced { return .libvips(.multiScan) }
        return ["srgb", "b-w"].contains(interpretation) ? .jpegRegion : .libvips(.colourSpace)
    }

    /// The decoder one render uses: the file's, unless the options ask for libvips or the region
    /// (`regionSide` pixels square, at the decode scale) is too large to hold.
    static func decoder(for header: ImageHeader, options: RenderOptions, regionSide: Int) -> DecoderPath {
        guard header.decoder == .jpegRegion else { return header.decoder }
        if options.decoderPreference == .libvips { return .libvips(.requested) }
        if regionSide * regionSide > maxRegionPixels { return .libvips(.largeRegion) }
        return .jpegRegion
    }
}
