import CropGeometry

/// One decode for both halves of a no-pose JPEG job (docs/ARCHITECTURE.md §2, "Faces"): the whole image decoded once
/// by the JPEG region decoder at the scale the centred square would be decoded at, from which the detector's small
/// image is resized and the crop's square cut. A JPEG cannot skip its entropy pass, so the detector's own 1/8
/// decode cost as much as the crop's; sharing the pass leaves the detector its network and a resize.
///
/// The square cut from the frame is the region decoder's square pixel for pixel (a region is exactly that
/// rectangle of the whole decode at the same scale: `JPEGRegionDecoderTests`), so a job that finds no face renders
/// today's centred avatar byte for byte. A face square that needs a finer scale than the frame's is decoded again,
/// as without the frame.
struct FaceFrame {
    /// A frame at most this many times the centred square's pixels (an oblong photo's whole width, e.g. 4:3
    /// against the square: 1.33); a panorama's frame would be mostly pixels no square uses, and its memory.
    static let maxFrameToSquare = 2.0

    /// The whole image at `factor`, stored orientation, with the file's ICC profile.
    let image: VImage
    let factor: Int

    /// Whether a no-pose job on `header` with `options` decodes a frame, and at which factor: a JPEG the region
    /// decoder takes, whose centred square it would decode by region, with a frame not much larger than it.
    static func factor(header: ImageHeader, options: RenderOptions) -> Int? {
        guard header.decoder == .jpegRegion, header.format == .jpeg,
            let plan = try? CropGeometry.plan(source: header.orientedSize, input: .centred, settings: options.settings)
        else { return nil }
        let factor = ShrinkOnLoad.factor(
            format: header.format, cropSide: Double(plan.pixelCrop.side), required: options.masterSize)
        let scaled = ShrinkOnLoad.decodedSize(header.storedSize, factor: factor)
        let squareSide = (plan.pixelCrop.side + factor - 1) / factor
        guard DecoderSelection.decoder(for: header, options: options, regionSide: squareSide) == .jpegRegion,
            Double(scaled.pixelCount) <= maxFrameToSquare * Double(squareSide * squareSide)
        else { return nil }
        return factor
    }

    /// The pixels a frame holds beyond the centred square's (for `MemoryAdmission`), 0 when no frame is decoded.
    static func extraBytes(header: ImageHeader, options: RenderOptions) -> Int {
        guard let factor = factor(header: header, options: options),
            let plan = try? CropGeometry.plan(source: header.orientedSize, input: .centred, settings: options.settings)
        else { return 0 }
        let squareSide = (plan.pixelCrop.side + factor - 1) / factor
        let bands = header.bands == 1 ? 1 : 3
        return max(0, ShrinkOnLoad.decodedSize(header.storedSize, factor: factor).pixelCount - squareSide * squareSide)
            * bands
    }

    /// Decodes the frame when `factor(header:options:)` says so; nil otherwise, and when the region decoder
    /// declines or fails (the job then decodes as it would without a frame, and meets the same error there).
    static func decode(
        _ input: InputBytes, header: ImageHeader, options: RenderOptions, cancellation: RenderCancellation
    ) throws(ImagingError) -> FaceFrame? {
        guard let factor = factor(header: header, options: options) else { return nil }
        let scaled = ShrinkOnLoad.decodedSize(header.storedSize, factor: factor)
        let flag = try cancellation.regionDecodeFlag(before: "faces")
        do {
            let region = try JPEGRegionDecoder.decode(
                input, scale: factor, x: 0, y: 0, width: scaled.width, height: scaled.height, cancel: flag)
            return FaceFrame(image: region.image, factor: factor)
        } catch {
            if error.kind == .cancelled { throw ImagingError(.cancelled, detail: "decode stopped: \(error.message)") }
            return nil
        }
    }

    /// The detector's image: the frame turned upright and fitted inside `side × side`, 8-bit sRGB.
    func small(header: ImageHeader, fitting side: Int) throws(VipsFailure) -> VImage {
        try SmallDecode.fitted(
            CropPipeline.turnUpright(image, Orientation(exif: header.orientation)), side: side)
    }

    /// The crop's square cut from the frame when the render would decode it by region at the frame's factor;
    /// nil when it needs another scale.
    func square(_ crop: PixelCrop, factor: Int) throws(VipsFailure) -> VImage? {
        guard factor == self.factor, crop.x + crop.side <= image.width, crop.y + crop.side <= image.height else {
            return nil
        }
        return try image.extractArea(left: crop.x, top: crop.y, width: crop.side, height: crop.side)
    }
}
