import CropGeometry

/// Which decoder renders a file's pixels (docs/ARCHITECTURE.md §2 step 3): the one place that decides.
///
/// The JPEG region decoder (`JPEGRegionDecoder`, libjpeg's API) decodes only the crop's square: rows
/// above it skipped without the inverse DCT, only the iMCU columns that cover it, nothing below its
/// last row. It runs for **baseline (single-scan), Huffman-coded, 8-bit JPEGs in grey, YCbCr or RGB**
/// — what cameras and phones write. Its pixels are libjpeg's, at the same DCT scale and with the same
/// upsampling as libvips' jpegload, so the square is the same either way.
///
/// The HEIF region decoder (`HEIFRegionDecoder`, libheif's API) decodes only the grid tiles the
/// crop's square touches, in stored orientation (a non-grid image whole, untransformed), with
/// libheif's colour conversion to RGB as libvips' heifload asks for it. It runs for **every HEIF/AVIF
/// whose primary image libheif opens** with `irot`/`imir` only, and no alpha plane on a grid.
///
/// Everything else takes libvips' loader, as before, for these reasons (`DecoderPath.LibvipsReason`):
///
/// - `.notJPEG` — PNG, WebP, GIF and TIFF have only libvips' loaders.
/// - `.heifLayout` — a HEIF clean-aperture crop (`clap`, rare outside tests) or a grid with alpha:
///   libheif applies the crop and merges alpha tiles on its whole-image path only.
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
/// - `.header` — libjpeg (libheif) cannot read a header libvips read, or reads another size: libvips
///   decides what the file is (and which error it gets).
/// - `.largeRegion` — a JPEG region is held whole in memory, libvips streams strips: past
///   `maxRegionPixels` (only reachable with large extra sizes) libvips needs less memory. A HEIF
///   region never falls back for its size: libvips' heifload holds the whole frame, more than any region.
/// - `.requested` — the render's options ask for libvips (comparisons, benchmarks).
///
/// The memory fallback (`fallback`, thumbnail resolution) uses the region decoders too: for JPEG the
/// same libjpeg decode at a larger DCT scale; for HEIF the file's own thumbnail item when the crop
/// in it is at least the output size, else the same tiles at the same box shrink (a region needs less memory
/// than whole rows or frames, which is the point of the fallback).
enum DecoderSelection {
    /// Largest region the JPEG region decoder holds in memory (16 MP: 48 MiB of RGB).
    static let maxRegionPixels = 16 * 1024 * 1024

    /// The decoder the file allows, from libvips' header and the region decoder's view of the same
    /// file (`jpeg` nil when libjpeg could not read it, `heif` nil when libheif could not). Fixed per
    /// file: `HeaderReader` stores it in `ImageHeader.decoder`.
    static func fileDecoder(
        format: ImageFormat, size: PixelSize, jpeg: JPEGRegionDecoder.Header?, heif: HEIFRegionDecoder.Layout? = nil
    ) -> DecoderPath {
        if format == .heif { return heifDecoder(size: size, layout: heif) }
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

    /// libheif's layout must show the image libvips showed (`size` is libheif's displayed size there).
    private static func heifDecoder(size: PixelSize, layout: HEIFRegionDecoder.Layout?) -> DecoderPath {
        guard let layout, layout.displaySize == size else { return .libvips(.header) }
        guard let orientation = layout.orientation, !(layout.isGrid && layout.hasAlpha) else {
            return .libvips(.heifLayout)
        }
        guard orientation.orientedSize(of: layout.storedSize) == size else { return .libvips(.header) }
        return .heifRegion
    }

    /// The decoder one render uses: the file's, unless the options ask for libvips or a JPEG region
    /// (`regionSide` pixels square, at the decode scale) is too large to hold.
    static func decoder(for header: ImageHeader, options: RenderOptions, regionSide: Int) -> DecoderPath {
        guard header.decoder.isRegion else { return header.decoder }
        if options.decoderPreference == .libvips { return .libvips(.requested) }
        if header.decoder == .jpegRegion, regionSide * regionSide > maxRegionPixels { return .libvips(.largeRegion) }
        return header.decoder
    }
}
