import CropGeometry
import Cvips
import Logging

/// The crop as an upright, opaque sRGB square in memory, from which every rendition is made.
struct DecodedSquare {
    /// `side × side`, 3 uchar bands, in memory, turned upright.
    let image: VImage
    /// What the loader decoded, in oriented pixels.
    let decodeSize: PixelSize
    let shrinkFactor: Int
}

/// DESIGN §2 steps 2–6: load (shrunk, sequential), crop in stored orientation, colour, flatten,
/// resize, evaluate into memory, then turn only the small square upright.
enum CropPipeline {
    static func decode(
        _ input: InputBytes, header: ImageHeader, plan: CropPlan, options: RenderOptions, fallback: Bool,
        logger: Logger, cancellation: RenderCancellation = RenderCancellation()
    ) throws(ImagingError) -> DecodedSquare {
        let orientation = Orientation(exif: header.orientation)
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

        let loaded: VImage
        do {
            loaded = try VipsLoader.open(input, as: header.format, shrink: factor, webpScale: webpScale)
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

        let pipeline: VImage
        do {
            // Sequential access: libvips stops reading rows after the crop's last one.
            let square = try loaded.extractArea(left: crop.x, top: crop.y, width: crop.side, height: crop.side)
            if square.hasAlpha {
                // Flatten first: resizing unpremultiplied alpha would bleed hidden colours into the edges.
                let colour = try ColourConversion.opaqueSRGB(square, background: options.background, logger: logger)
                pipeline = try resize(colour, to: side)
            } else {
                // Opaque: resize first and convert only the output's pixels, as vips_thumbnail does.
                // libvips' ICC transform goes through float Lab and costs more per pixel than the
                // lanczos3 reduction (bench/README.md: ~20 ms per megapixel on one thread).
                pipeline = try ColourConversion.opaqueSRGB(
                    resize(square, to: side), background: options.background, logger: logger)
            }
        } catch {
            throw ImagingError.processing(error)
        }
        // The evaluation: where the pixels are decoded, and where a cancellation stops libvips.
        let memory = try cancellation.evaluating([loaded, pipeline], stage: "decode", otherwise: ImagingError.decoding)
        {
            () throws(VipsFailure) -> VImage in try pipeline.copyMemory()
        }
        do {
            let upright = try turnUpright(memory, orientation)
            let longEdge = max(header.storedSize.width, header.storedSize.height)
            let reduction = Double(longEdge) / Double(max(decoded.width, decoded.height))
            return DecodedSquare(
                image: upright,
                decodeSize: orientation.orientedSize(of: decoded),
                shrinkFactor: max(1, Int(reduction.rounded())))
        } catch {
            throw ImagingError.processing(error)
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
        case .clockwise90: result = try result.rotate(VIPS_ANGLE_D90)
        case .clockwise180: result = try result.rotate(VIPS_ANGLE_D180)
        case .clockwise270: result = try result.rotate(VIPS_ANGLE_D270)
        }
        if orientation.flipsHorizontally {
            result = try result.flipHorizontally()
        }
        return result
    }
}
