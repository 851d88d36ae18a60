/// DESIGN §2 steps 7–8: one square size, metadata stripped but for an sRGB profile, encoded.
enum RenditionEncoder {
    /// PNG: libdeflate level 1, the Average filter on every row. Measured on 24 avatars (6 camera and
    /// generated photos × the bench's 4 poses, 512² RGB), mean CPU ms per file on the loaded 2-core dev
    /// machine, and mean bytes (libvips' pngsave at zlib 1 without filters, what this replaced:
    /// 16.2 ms, 543 KB):
    ///
    ///     level 1:  none 6.0 ms 546 KB · Sub 5.1 / 430 · Up 5.7 / 419 · Average 4.7 / 404 ·
    ///               Paeth 5.1 / 405 · per-row minimum sum of |residuals| (libpng's heuristic) 8.1 / 400
    ///     Average:  level 2 10.2 ms 398 KB · 3 11.7 / 396 · 4 13.6 / 395 · 5 16.6 / 391 · 6 20.3 / 389
    ///
    /// Filtering costs 0.1–0.6 ms (3–5 ms for the heuristic, which tries all five filters per row); the
    /// deflate is the rest, and it runs faster on better-predicted rows. Above level 1 libdeflate
    /// searches harder for 1–4% smaller files at twice the time or more. Average was the fastest at
    /// level 1 and as small as Paeth: about 3.4× faster than libvips' pngsave, files 25% smaller. In
    /// `avatar-bench run`'s encode stage (the square's rotation and pixel fetch included) the same 24
    /// renders went from 16.3 to 5.7 ms on average, every file 11–36% smaller, the pixels identical.
    static let pngLevel = 1
    static let pngFilter = PNGWriter.Filter.average

    /// pHYs: the render's 72 dpi, in pixels per metre (2835, as libvips' pngsave rounded it).
    static let pngPixelsPerMetre = Int((CropPipeline.outputDotsPerInch / 0.0254).rounded())

    /// The writer of every PNG avatar, carrying `srgbProfile` (made once: `RenderResources.pngWriter`).
    static func pngWriter(srgbProfile: [UInt8]) -> PNGWriter {
        PNGWriter(
            level: pngLevel, filter: pngFilter, iccProfile: srgbProfile, pixelsPerMetre: pngPixelsPerMetre)
    }

    /// `resources` give the sRGB profile for JPEG and the PNG writer, which carries the same profile.
    static func encode(
        _ square: VImage, size: Int, options: RenderOptions, resources: RenderResources
    ) throws(ImagingError) -> Rendition {
        let sized: VImage
        do {
            sized = try CropPipeline.resize(square, to: size)
        } catch {
            throw ImagingError.processing(error)
        }
        switch options.format {
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

/// Just enough JPEG marker handling to embed an ICC profile.
enum JPEGSegments {
    static let iccSignature: [UInt8] = Array("ICC_PROFILE".utf8) + [0]
    /// Largest profile chunk per APP2 segment: 65535 − length field − signature − sequence bytes.
    static let maxChunk = 65535 - 2 - 14

    /// Inserts `profile` as ICC_PROFILE APP2 segments after SOI and any JFIF/EXIF APPn segments
    /// that must come first. Returns the input unchanged if it does not start with SOI.
    static func insertingICCProfile(_ profile: [UInt8], into jpeg: [UInt8]) -> [UInt8] {
        guard jpeg.count >= 4, jpeg[0] == 0xFF, jpeg[1] == 0xD8, !profile.isEmpty else { return jpeg }
        var offset = 2
        // Keep APP0 (JFIF) first, as the JFIF specification requires.
        while offset + 4 <= jpeg.count, jpeg[offset] == 0xFF, jpeg[offset + 1] == 0xE0 {
            let length = Int(jpeg[offset + 2]) << 8 | Int(jpeg[offset + 3])
            offset += 2 + length
        }
        guard offset <= jpeg.count else { return jpeg }
        let chunks = stride(from: 0, to: profile.count, by: maxChunk).map {
            profile[$0..<min($0 + maxChunk, profile.count)]
        }
        guard chunks.count <= 255 else { return jpeg }
        var segments: [UInt8] = []
        for (index, chunk) in chunks.enumerated() {
            let length = 2 + iccSignature.count + 2 + chunk.count
            segments += [0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)]
            segments += iccSignature
            segments += [UInt8(index + 1), UInt8(chunks.count)]
            segments += chunk
        }
        return Array(jpeg[..<offset]) + segments + Array(jpeg[offset...])
    }
}
