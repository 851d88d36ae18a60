import CropGeometry

/// DESIGN §2 step 1: identify the format and read the header without decoding pixels, rejecting
/// unsupported formats, oversized files, decompression bombs and too-small images.
enum HeaderReader {
    static func read(_ input: InputBytes, limits: ImageLimits) throws(ImagingError) -> (ImageHeader, VImage) {
        guard input.count <= limits.maxBytes else {
            throw ImagingError(.tooLarge, detail: "\(input.count) bytes > \(limits.maxBytes)")
        }
        // Format by bytes, loader by name: libvips never sniffs (see FormatSniffer).
        let bytes = UnsafeRawBufferPointer(start: input.base, count: input.count)
        guard let format = FormatSniffer.format(of: bytes) else {
            throw ImagingError(.unsupportedFormat, detail: "not JPEG, PNG, WebP, HEIF/AVIF, GIF or TIFF")
        }
        // libheif allocates (and refuses with a "memory allocation" error) before libvips reports a size:
        // judge a HEIF/AVIF bomb by the size its container declares.
        if format == .heif, let declared = ISOBMFF.largestImageSize(bytes),
            declared.width * declared.height > limits.maxPixels
        {
            throw ImagingError(
                .tooManyPixels, detail: "declares \(declared.width)x\(declared.height) > \(limits.maxPixels) pixels")
        }
        let image: VImage
        do {
            image = try VipsLoader.open(input, as: format)
        } catch {
            throw ImagingError.decoding(error)
        }
        let stored = PixelSize(width: image.width, height: image.height)
        guard stored.width > 0, stored.height > 0 else {
            throw ImagingError(.decodeFailed, detail: "empty image")
        }
        // Overflow-safe: both sides are Int32 in libvips.
        guard stored.width * stored.height <= limits.maxPixels else {
            throw ImagingError(
                .tooManyPixels, detail: "\(stored.width)x\(stored.height) > \(limits.maxPixels) pixels")
        }
        guard min(stored.width, stored.height) >= limits.minSide else {
            throw ImagingError(.tooSmall, detail: "\(stored.width)x\(stored.height) < \(limits.minSide)")
        }
        // libheif applies HEIF's irot/imir itself: the pixels arrive upright whatever EXIF says.
        let orientation = format == .heif ? 1 : image.intField("orientation") ?? 1
        let header = ImageHeader(
            format: format,
            storedSize: stored,
            orientation: orientation,
            bands: image.bands,
            hasAlpha: image.hasAlpha,
            bitDepth: image.bitsPerSample,
            interpretation: image.interpretationName,
            hasICCProfile: image.hasICCProfile,
            interlaced: (image.intField("interlaced") ?? 0) != 0,
            byteCount: input.count
        )
        return (header, image)
    }
}
