import CropGeometry

/// One decode for both halves of a no-pose job (docs/ARCHITECTURE.md §2, "Faces"): the whole image decoded once by
/// the format's region decoder (a WebP or a small PNG: libvips' loader) at the scale the centred square would be
/// decoded at, whose pixels the detector reads where they lie (it fits and turns them itself) and from which the
/// crop's square is cut. A JPEG cannot skip its entropy pass, a HEVC grid without a thumbnail item has no smaller
/// decode than its tiles, libwebp decodes every pixel whatever the scale and a PNG has no smaller decode, so the
/// detector's own small decode cost as much as the crop's; sharing it leaves the detector its network and a resize.
///
/// The square cut from the frame is the region decoder's square pixel for pixel (a JPEG region is exactly that
/// rectangle of the whole decode at the same scale, `JPEGRegionDecoderTests`; a HEIF region's boxes and colour
/// conversion depend on nothing but its pixels' own, `HEIFRegionDecoderTests`; a WebP's is the loader's own image,
/// which the render would otherwise load again), so a job that finds no face
/// renders today's centred avatar byte for byte. A face square that needs a finer scale than the frame's is decoded
/// again, as without the frame.
struct FaceFrame {
    /// A frame at most this many times the centred square's pixels (an oblong photo's whole width, e.g. 4:3
    /// against the square: 1.33); a panorama's frame would be mostly pixels no square uses, and its memory.
    static let maxFrameToSquare = 2.0
    /// The formats whose frame is libvips' loader's whole image, which the render cuts instead of loading again:
    /// libwebp decodes every pixel whatever the scale, and a PNG has no smaller decode.
    static let loaderFormats: Set<ImageFormat> = [.webp, .png]
    /// A PNG's frame holds at most this many bytes. libvips streams a non-interlaced PNG through the render, so
    /// its frame is memory the job would not otherwise hold; a sign-in provider's avatar (1024 px square, RGBA: 4
    /// MiB) is the case it serves, where the detector's own decode of the PNG cost as much as the render's.
    static let maxPNGFrameBytes = 4 << 20

    /// The whole image at `factor`, stored orientation, with the file's colour profile: for a HEIF, boxes from
    /// `origin` (`HEIFRegionDecoder.ShrunkRegion`).
    let image: VImage
    let factor: Int
    /// How the frame turns upright: the EXIF tag's orientation, or a HEIF's irot/imir.
    let orientation: Orientation

    /// What a frame would be for a no-pose job on `header` with `options`: its factor and size, or nil when none is
    /// decoded — a file neither a region decoder nor (`loaderFormats`) libvips' whole-image loader takes, a centred
    /// square it would not decode by region, a HEIF with a thumbnail item (cheaper for the detector) or more than 8
    /// bits, a PNG over `maxPNGFrameBytes`, a frame much larger than the square, or one smaller than the detector's
    /// canvas (a small avatar's scale: the detector's own small decode sees more).
    static func plan(header: ImageHeader, options: RenderOptions) -> (factor: Int, size: PixelSize, square: Int)? {
        guard header.decoder == .jpegRegion || header.decoder == .heifRegion || loaderFormats.contains(header.format),
            let plan = try? CropGeometry.plan(source: header.orientedSize, input: .centred, settings: options.settings)
        else { return nil }
        let factor = ShrinkOnLoad.factor(
            format: header.format, cropSide: Double(plan.pixelCrop.side), required: options.masterSize)
        let size: PixelSize
        if header.decoder == .heifRegion {
            guard let layout = header.heifLayout, layout.orientation != nil, layout.thumbnailSize == nil,
                layout.bitDepth == 8, !layout.hasAlpha
            else { return nil }
            size = ShrinkOnLoad.boxShrunkSize(layout.storedSize, factor: factor)
        } else {
            // libjpeg's size; libwebp's (scaled by 1/factor, rounded) within a pixel of it; a PNG's own (factor 1).
            size = ShrinkOnLoad.decodedSize(header.storedSize, factor: factor)
            guard header.format != .png || pngBytes(header) <= maxPNGFrameBytes else { return nil }
        }
        let square = (plan.pixelCrop.side + factor - 1) / factor
        guard DecoderSelection.decoder(for: header, options: options, regionSide: square) == header.decoder,
            max(size.width, size.height) >= FaceDetector.canvas,
            Double(size.pixelCount) <= maxFrameToSquare * Double(square * square)
        else { return nil }
        return (factor, size, square)
    }

    /// The bytes a frame holds beyond what the render holds without it (for `MemoryAdmission`), 0 when no frame is
    /// decoded. A WebP's frame, and an interlaced PNG's, is the whole image libvips' loader holds anyway, which the
    /// estimate counts already; a non-interlaced PNG's is all extra (libvips would stream it); a region decoder's is
    /// what lies beyond the centred square.
    static func extraBytes(header: ImageHeader, options: RenderOptions) -> Int {
        guard let (_, size, square) = plan(header: header, options: options) else { return 0 }
        switch header.format {
        case .webp: return 0
        case .png: return header.interlaced ? 0 : pngBytes(header)
        default: return max(0, size.pixelCount - square * square) * (header.bands == 1 ? 1 : 3)
        }
    }

    /// A PNG decoded whole: every band, 8 or 16 bits a sample.
    private static func pngBytes(_ header: ImageHeader) -> Int {
        header.storedSize.pixelCount * max(1, header.bands) * (header.bitDepth > 8 ? 2 : 1)
    }

    /// Decodes the frame when `plan(header:options:)` says so; nil otherwise, and when the region decoder declines
    /// or fails (the job then decodes as it would without a frame, and meets the same error there).
    static func decode(
        _ input: InputBytes, header: ImageHeader, options: RenderOptions, cancellation: RenderCancellation
    ) throws(ImagingError) -> FaceFrame? {
        guard let (factor, size, _) = plan(header: header, options: options) else { return nil }
        let flag = try cancellation.regionDecodeFlag(before: "faces")
        if loaderFormats.contains(header.format) {
            // The loader the render would open, at its scale, held in memory.
            do {
                let image = try VipsLoader.open(input, as: header.format, shrink: factor).copyMemory()
                return FaceFrame(image: image, factor: factor, orientation: Orientation(exif: header.orientation))
            } catch {
                return nil
            }
        }
        if header.decoder == .heifRegion {
            guard let layout = header.heifLayout, let orientation = layout.orientation else { return nil }
            // The boxes the render's own square is shrunk from.
            let origin = HEIFRegionDecoder.ShrunkRegion.origin(
                orientation: orientation, stored: layout.storedSize, factor: factor)
            do {
                let region = try HEIFRegionDecoder.decode(
                    input, maxPixels: layout.storedSize.pixelCount, x: 0, y: 0, width: size.width,
                    height: size.height, shrink: factor, origin: origin, thumbnail: false, cancel: flag)
                return FaceFrame(image: region.image, factor: factor, orientation: orientation)
            } catch {
                if error.kind == .cancelled, let stopped = error.imagingError { throw stopped }
                return nil
            }
        }
        do {
            let region = try JPEGRegionDecoder.decode(
                input, scale: factor, x: 0, y: 0, width: size.width, height: size.height, cancel: flag)
            return FaceFrame(image: region.image, factor: factor, orientation: Orientation(exif: header.orientation))
        } catch {
            if error.kind == .cancelled, let stopped = error.imagingError { throw stopped }
            return nil
        }
    }

    /// Whether the detector reads the frame's pixels where they lie (8-bit grey or RGB): it then fits and turns
    /// them itself (`FaceDetector.detect`), in about a millisecond where libvips' resize and turn took about five
    /// (a 12 MP photo's frame of 1008 × 756, one core).
    var detectorReadsPixels: Bool {
        image.bitsPerSample == 8 && (image.bands == 1 || image.bands == 3)
    }

    /// The detector's image when it cannot read the frame's pixels: the frame fitted inside `side × side` (a square, so either way up), then turned upright,
    /// 8-bit sRGB; the small image is turned, not the frame.
    func small(fitting side: Int) throws(VipsFailure) -> VImage {
        try CropPipeline.turnUpright(SmallDecode.fitted(image, side: side), orientation).copyMemory()
    }

    /// The crop's square cut from the frame when the render would decode it by region at the frame's factor;
    /// nil when it needs another scale.
    func square(_ crop: PixelCrop, factor: Int) throws(VipsFailure) -> VImage? {
        guard factor == self.factor, crop.x >= 0, crop.y >= 0, crop.x + crop.side <= image.width,
            crop.y + crop.side <= image.height
        else { return nil }
        return try image.extractArea(left: crop.x, top: crop.y, width: crop.side, height: crop.side)
    }
}
