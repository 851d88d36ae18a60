import CropGeometry

/// docs/ARCHITECTURE.md §2 steps 7–8: one square size, metadata stripped but for an sRGB profile, encoded in each of
/// its formats (docs/FORMATS.md).
enum RenditionEncoder {
    /// PNG: libdeflate level 1, the Average filter on every row: the fastest of the levels and filters
    /// measured, and as small as Paeth (the measurements: CHANGELOG.md, "What the render bench changed", item 5).
    static let pngLevel = 1
    static let pngFilter = PNGWriter.Filter.average

    /// pHYs: the render's 72 dpi, in pixels per metre (2835, as libvips' pngsave rounded it).
    static let pngPixelsPerMetre = Int((CropPipeline.outputDotsPerInch / 0.0254).rounded())

    /// The writer of every PNG avatar, carrying `srgbProfile` (made once: `RenderResources.pngWriter`).
    static func pngWriter(srgbProfile: [UInt8]) -> PNGWriter {
        PNGWriter(
            level: pngLevel, filter: pngFilter, iccProfile: srgbProfile, pixelsPerMetre: pngPixelsPerMetre)
    }

    /// The square at `size` (lanczos3; the square itself when it is that size): what every format of the size
    /// is encoded from.
    static func resized(_ square: VImage, to size: Int) throws(ImagingError) -> VImage {
        do {
            return try CropPipeline.resize(square, to: size)
        } catch {
            throw ImagingError.processing(error)
        }
    }

    /// `sized` (a 3-band uchar sRGB square) as `format`. `resources` give the sRGB profile every format embeds and
    /// the PNG writer, which carries the same profile. No format gets the source's metadata: PNG, WebP and AVIF are
    /// written from the pixels alone by our own writers, JPEG by jpegsave with everything stripped.
    static func encode(
        _ sized: VImage, format: AvatarFormat, options: RenderOptions, resources: RenderResources
    ) throws(ImagingError) -> Rendition {
        let size = sized.width
        switch format {
        case .png:
            // Our own writer: it writes only IHDR, iCCP (the sRGB profile), pHYs, IDAT and IEND, so
            // nothing of the source's metadata can reach the file.
            return Rendition(size: size, format: .png, data: try png(sized, writer: resources.pngWriter))
        case .jpeg:
            do {
                // jpegsave without strip invents a fresh EXIF block: strip everything, then add the
                // profile as APP2 segments.
                let data = try sized.jpegData(quality: options.jpegQuality, strip: true)
                return Rendition(
                    size: size, format: .jpeg,
                    data: JPEGSegments.insertingICCProfile(resources.srgbProfile, into: data))
            } catch {
                throw ImagingError.processing(error)
            }
        case .webp:
            return Rendition(
                size: size, format: .webp,
                data: try WebPEncoder.encode(
                    sized, quality: options.encoder.webpQuality, iccProfile: resources.srgbProfile))
        case .avif:
            return Rendition(
                size: size, format: .avif,
                data: try AVIFEncoder.encode(
                    sized, quality: options.encoder.avifQuality, speed: options.encoder.avifSpeed,
                    iccProfile: resources.srgbProfile))
        }
    }

    /// The PNG of a 3-band uchar image (what `CropPipeline` makes), through `writer`.
    static func png(_ image: VImage, writer: PNGWriter) throws(ImagingError) -> [UInt8] {
        guard image.bands == 3, image.isUchar else {
            throw ImagingError(
                .processingFailed, detail: "PNG of \(image.bands) bands of \(image.bitsPerSample) bits, not 3 uchar")
        }
        let (width, height) = (image.width, image.height)
        let written: Result<[UInt8], PNGWriteError>
        do {
            written = try image.withPixels { pixels in
                Result { () throws(PNGWriteError) in try writer.write(rgb: pixels, width: width, height: height) }
            }
        } catch {
            throw ImagingError.processing(error)
        }
        switch written {
        case .success(let data): return data
        case .failure(let error):
            throw ImagingError(error.reason == .outOfMemory ? .outOfMemory : .processingFailed, detail: "\(error)")
        }
    }
}
