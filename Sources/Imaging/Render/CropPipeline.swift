import CropGeometry
import Logging

/// The crop as an upright, opaque sRGB square in memory, from which every rendition is made.
struct DecodedSquare {
    /// `side × side`, 3 uchar bands, in memory, turned upright.
    let image: VImage
    /// What the loader decoded, in oriented pixels.
    let decodeSize: PixelSize
    let shrinkFactor: Int
    let decoder: DecoderPath
}

/// docs/ARCHITECTURE.md §2 steps 3–7: decode the crop's square in stored orientation (libjpeg's region decoder,
/// or libvips' loader shrunk and sequential, then cut), colour, flatten, resize, evaluate into
/// memory, then turn only the small square upright.
enum CropPipeline {
    /// The resolution every rendition declares (PNG pHYs, JFIF density), whichever decoder ran: the
    /// source's own density is its metadata, and would differ between the decoders.
    static let outputDotsPerInch = 72.0

    /// `frame`: the job's whole image already decoded by its region decoder (`FaceFrame`), cut instead of decoding
    /// the region again when it is at the render's scale.
    static func decode(
        _ input: InputBytes, header: ImageHeader, plan: CropPlan, options: RenderOptions, fallback: Bool,
        frame: FaceFrame? = nil, transforms: ICCTransformCache, logger: Logger,
        cancellation: RenderCancellation = RenderCancellation()
    ) throws(ImagingError) -> DecodedSquare {
        var orientation = Orientation(exif: header.orientation)
        let side = options.masterSize
        let fullFactor = ShrinkOnLoad.factor(
            format: header.format, cropSide: Double(plan.pixelCrop.side), required: side)
        var factor = fullFactor
        var webpScale: Double?
        if fallback {
            factor = ShrinkOnLoad.fallbackFactor(
                format: header.format, stored: header.storedSize, longEdge: options.fallbackLongEdge,
                fullFactor: fullFactor)
            if header.format == .webp {
                webpScale = ShrinkOnLoad.fallbackWebPScale(
                    stored: header.storedSize, longEdge: options.fallbackLongEdge, fullFactor: fullFactor)
            }
        }

        // A region decoder where the file and the request allow it (`DecoderSelection`), else libvips.
        var decoder = header.decoder
        var region: Source?
        // `orientation` turns the square upright: the file's EXIF orientation, or (HEIF region) its
        // irot/imir, or none (HEIF thumbnail, decoded as displayed).
        if header.decoder == .jpegRegion {
            let decoded = ShrinkOnLoad.jpegLoadedSize(header.storedSize, factor: factor)
            let crop = storedCrop(plan: plan, orientation: orientation, stored: header.storedSize, decoded: decoded)
            decoder = DecoderSelection.decoder(for: header, options: options, regionSide: crop.side)
            if decoder == .jpegRegion, let frame, let square = try cut(frame, crop: crop, factor: factor) {
                region = Source(square: square, root: frame.image, decoded: decoded)
            } else if decoder == .jpegRegion {
                region = try decodeRegion(
                    input, crop: crop, decoded: decoded, factor: factor, cancellation: cancellation)
                if region == nil {
                    logger.debug("the JPEG region decoder declined the file, decoding with libvips")
                    decoder = .libvips(.header)
                }
            }
        } else if header.decoder == .heifRegion, let layout = header.heifLayout,
            let heifOrientation = layout.orientation
        {
            decoder = DecoderSelection.decoder(for: header, options: options, regionSide: plan.pixelCrop.side)
            if decoder == .heifRegion {
                let decoded = try decodeHEIFRegion(
                    input, layout: layout, orientation: heifOrientation, plan: plan, factor: factor,
                    options: options, fallback: fallback, frame: frame, cancellation: cancellation)
                if let decoded {
                    region = decoded.source
                    orientation = decoded.orientation
                } else {
                    logger.debug("the HEIF region decoder declined the file, decoding with libvips")
                    decoder = .libvips(.header)
                }
            }
        }
        let source: Source
        if let region {
            source = region
        } else {
            source = try load(
                input, header: header, plan: plan, orientation: Orientation(exif: header.orientation), factor: factor,
                webpScale: webpScale, frame: fallback ? nil : frame)
        }

        let pipeline: VImage
        // Set when the colour conversion is left for after the evaluation (below).
        var transform: ICCTransform?
        do {
            let square = source.square
            if square.hasAlpha {
                // Flatten first: resizing unpremultiplied alpha would bleed hidden colours into the edges.
                let colour = try ColourConversion.opaqueSRGB(square, background: options.background, logger: logger)
                pipeline = try resize(colour, to: side)
            } else if let cached = ColourConversion.cachedTransform(for: square, in: transforms) {
                // 8-bit RGB with a profile seen before (or usable now): the same conversion as libvips'
                // icc_transform, on the resized square in memory, with a transform built once.
                transform = cached
                pipeline = try resize(square, to: side)
            } else {
                // Opaque: resize first and convert only the output's pixels, as vips_thumbnail does.
                // libvips' ICC transform (an lcms transform built for every image) costs more per pixel
                // than the lanczos3 reduction (CHANGELOG.md, "What the render bench changed", item 1).
                pipeline = try ColourConversion.opaqueSRGB(
                    resize(square, to: side), background: options.background, logger: logger)
            }
        } catch {
            throw ImagingError.processing(error)
        }
        // The evaluation: where libvips decodes (on its path) and resizes, and where a cancellation
        // stops libvips.
        var memory = try cancellation.evaluating(
            [source.root, pipeline], stage: "decode", otherwise: ImagingError.decoding
        ) { () throws(VipsFailure) -> VImage in
            try pipeline.copyMemory()
        }
        do {
            if let transform {
                // Short and bounded (the square's pixels, ~3 ms for 512 px): no cancellation point.
                memory = try ColourConversion.applying(transform, to: memory)
            }
            let upright = try turnUpright(memory, orientation).withResolution(dotsPerInch: outputDotsPerInch)
            let decoded = source.decoded
            let longEdge = max(header.storedSize.width, header.storedSize.height)
            let reduction = Double(longEdge) / Double(max(decoded.width, decoded.height))
            return DecodedSquare(
                image: upright,
                decodeSize: orientation.orientedSize(of: decoded),
                shrinkFactor: max(1, Int(reduction.rounded())),
                decoder: decoder)
        } catch {
            throw ImagingError.processing(error)
        }
    }

    /// The crop's square in stored orientation, before colour and resize.
    struct Source {
        let square: VImage
        /// What the square comes from: libvips' loader, or (region decoder) the square itself.
        let root: VImage
        /// The size decoded, stored orientation; for the region decoder, the scaled image the square
        /// lies in (the size libvips' loader would have produced).
        let decoded: PixelSize
    }

    /// libvips' loader, shrunk on load and sequential (whole rows down to the crop's last one), cut. A WebP's or a
    /// PNG's `frame` at the same scale is that loader's image already decoded (`FaceFrame`), cut instead of loading
    /// again.
    private static func load(
        _ input: InputBytes, header: ImageHeader, plan: CropPlan, orientation: Orientation, factor: Int,
        webpScale: Double?, frame: FaceFrame? = nil
    ) throws(ImagingError) -> Source {
        var loaded: VImage
        do {
            if FaceFrame.loaderFormats.contains(header.format), let frame, frame.factor == factor {
                loaded = frame.image
            } else {
                loaded = try VipsLoader.open(input, as: header.format, shrink: factor, webpScale: webpScale)
            }
            if ShrinkOnLoad.boxShrinks(header.format), factor > 1 {
                // The HEIF region decoder's box shrink, on the whole image: whole boxes only.
                let shrunk = ShrinkOnLoad.boxShrunkSize(
                    PixelSize(width: loaded.width, height: loaded.height), factor: factor)
                loaded = try loaded.shrink(by: factor).extractArea(
                    left: 0, top: 0, width: shrunk.width, height: shrunk.height)
            }
        } catch {
            throw ImagingError.decoding(error)
        }
        let decoded = PixelSize(width: loaded.width, height: loaded.height)
        guard decoded.width > 0, decoded.height > 0, decoded.width <= header.storedSize.width,
            decoded.height <= header.storedSize.height
        else {
            throw ImagingError(
                .decodeFailed, detail: "decoded \(decoded.width)x\(decoded.height) does not fit the header")
        }
        let crop = storedCrop(plan: plan, orientation: orientation, stored: header.storedSize, decoded: decoded)
        do {
            // Sequential access: libvips stops reading rows after the crop's last one.
            let square = try loaded.extractArea(left: crop.x, top: crop.y, width: crop.side, height: crop.side)
            return Source(square: square, root: loaded, decoded: decoded)
        } catch {
            throw ImagingError.processing(error)
        }
    }

    /// `crop` cut from the job's whole decode, when it is at `factor` (`FaceFrame.square`).
    private static func cut(_ frame: FaceFrame, crop: PixelCrop, factor: Int) throws(ImagingError) -> VImage? {
        do {
            return try frame.square(crop, factor: factor)
        } catch {
            throw ImagingError.processing(error)
        }
    }

    /// libjpeg's region decoder: only the square's pixels, at the DCT scale `factor`. Nil when the
    /// decoder declines the file after all (its own checks); libvips decodes it then.
    private static func decodeRegion(
        _ input: InputBytes, crop: PixelCrop, decoded: PixelSize, factor: Int, cancellation: RenderCancellation
    ) throws(ImagingError) -> Source? {
        let flag = try cancellation.regionDecodeFlag(before: "decode")
        let region: JPEGRegionDecoder.Region
        do {
            region = try JPEGRegionDecoder.decode(
                input, scale: factor, x: crop.x, y: crop.y, width: crop.side, height: crop.side, cancel: flag)
        } catch {
            guard let failure = error.imagingError else { return nil }
            throw failure
        }
        return Source(square: region.image, root: region.image, decoded: decoded)
    }

    /// libheif's region decoder: only the grid tiles under the square, in stored orientation, box-shrunk
    /// by `factor` as each tile's overlap is copied, and the orientation that turns it upright. The
    /// square is the one libvips' path cuts from the upright image shrunk by the same boxes (`load`),
    /// mapped into stored orientation. On the memory fallback, the file's own thumbnail item when the
    /// crop in it is at least the master size (displayed orientation, turned by libheif), else the same
    /// tiles. Nil when the decoder declines the file after all (libvips decodes it then).
    private static func decodeHEIFRegion(
        _ input: InputBytes, layout: HEIFRegionDecoder.Layout, orientation: Orientation, plan: CropPlan, factor: Int,
        options: RenderOptions, fallback: Bool, frame: FaceFrame?, cancellation: RenderCancellation
    ) throws(ImagingError) -> (source: Source, orientation: Orientation)? {
        let flag = try cancellation.regionDecodeFlag(before: "decode")
        let shrunk = HEIFRegionDecoder.ShrunkRegion(
            plan: plan, orientation: orientation, stored: layout.storedSize, factor: factor)
        if !fallback, let frame, let square = try cut(frame, crop: shrunk.crop, factor: factor) {
            return (Source(square: square, root: frame.image, decoded: shrunk.decoded), orientation)
        }
        var (crop, decoded, shrink, origin) = (shrunk.crop, shrunk.decoded, factor, shrunk.origin)
        var turn = orientation
        var thumbnail = false
        if fallback,
            let thumb = HEIFRegionDecoder.thumbnailCrop(layout: layout, plan: plan, minSide: options.masterSize)
        {
            (crop, decoded, turn, thumbnail, shrink, origin) = (thumb.crop, thumb.size, .upright, true, 1, (0, 0))
        }
        do {
            let region = try HEIFRegionDecoder.decode(
                input, maxPixels: layout.storedSize.pixelCount, crop: crop, shrink: shrink, origin: origin,
                thumbnail: thumbnail, cancel: flag)
            return (Source(square: region.image, root: region.image, decoded: decoded), turn)
        } catch {
            guard let failure = error.imagingError else { return nil }
            throw failure
        }
    }

    /// The crop in the decoded image's stored orientation. At full size the whole-pixel crop maps
    /// exactly; after shrink-on-load the unrounded square is scaled and rounded, kept inside.
    static func storedCrop(plan: CropPlan, orientation: Orientation, stored: PixelSize, decoded: PixelSize)
        -> PixelCrop
    {
        if decoded == stored {
            return orientation.storedCrop(plan.pixelCrop, stored: stored)
        }
        let square = orientation.storedSquare(
            plan.crop, stored: (Double(stored.width), Double(stored.height)))
        let sx = Double(decoded.width) / Double(stored.width)
        let sy = Double(decoded.height) / Double(stored.height)
        let side = max(1, min(Int((square.side * min(sx, sy)).rounded()), decoded.width, decoded.height))
        let x = min(max(Int((square.x * sx).rounded()), 0), decoded.width - side)
        let y = min(max(Int((square.y * sy).rounded()), 0), decoded.height - side)
        return PixelCrop(x: x, y: y, side: side)
    }

    /// Lanczos3 to exactly `side × side` (a final crop or edge copy absorbs any rounding).
    static func resize(_ image: VImage, to side: Int) throws(VipsFailure) -> VImage {
        var result = image
        if image.width != side || image.height != side {
            result = try image.resize(
                horizontal: Double(side) / Double(image.width), vertical: Double(side) / Double(image.height))
        }
        if result.width > side || result.height > side {
            result = try result.extractArea(
                left: 0, top: 0, width: min(result.width, side), height: min(result.height, side))
        }
        if result.width < side || result.height < side {
            result = try result.embed(x: 0, y: 0, width: side, height: side)
        }
        return result
    }

    static func turnUpright(_ image: VImage, _ orientation: Orientation) throws(VipsFailure) -> VImage {
        var result = image
        switch orientation.rotation {
        case .none: break
        case .clockwise90: result = try result.rotate(.clockwise90)
        case .clockwise180: result = try result.rotate(.clockwise180)
        case .clockwise270: result = try result.rotate(.clockwise270)
        }
        if orientation.flipsHorizontally {
            result = try result.flipHorizontally()
        }
        return result
    }
}
