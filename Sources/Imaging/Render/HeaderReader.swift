import CropGeometry

/// docs/ARCHITECTURE.md §2 step 1: identify the format and read the header without decoding pixels, rejecting
/// unsupported formats, oversized files, decompression bombs and too-small images.
enum HeaderReader {
    static func read(_ input: InputBytes, limits: ImageLimits) throws(ImagingError) -> ImageHeader {
        guard input.count <= limits.maxBytes else {
            throw ImagingError(.tooLarge, detail: "\(input.count) bytes > \(limits.maxBytes)")
        }
        // Format by bytes, loader by name: libvips never sniffs (its sniffing asks every loader,
        // and some loop forever on hostile bytes), and nothing unrecognised reaches it.
        guard let format = FormatSniffer.format(of: input.bytes) else {
            throw ImagingError(.unsupportedFormat, detail: "no accepted format's signature")
        }
        try checkDeclaredSize(input, format: format, limits: limits)
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
        // libjpeg's view of the same header (no pixels either): whether the region decoder may run.
        let jpeg = format == .jpeg ? try? JPEGRegionDecoder.header(of: input) : nil
        // libheif's layout of the primary image (boxes only): whether the HEIF region decoder may run.
        let heif = format == .heif ? try? HEIFRegionDecoder.layout(of: input, maxPixels: limits.maxPixels) : nil
        let decoder = DecoderSelection.fileDecoder(format: format, size: stored, jpeg: jpeg, heif: heif)
        return ImageHeader(
            format: format,
            storedSize: stored,
            orientation: orientation,
            bands: image.bands,
            hasAlpha: image.hasAlpha,
            bitDepth: image.bitsPerSample,
            interpretation: image.interpretationName,
            hasICCProfile: image.hasICCProfile,
            interlaced: (image.intField("interlaced") ?? 0) != 0,
            byteCount: input.count,
            decoder: decoder,
            heifLayout: decoder == .heifRegion ? heif : nil
        )
    }

    /// Refuses a decompression bomb from the size its header declares, before any decoder sees
    /// it (libheif would allocate for the declared size, and refuses sizes over its own limit
    /// with a "memory allocation" error).
    static func checkDeclaredSize(_ input: InputBytes, format: ImageFormat, limits: ImageLimits)
        throws(ImagingError)
    {
        let declared: PixelSize?
        do {
            declared = try DeclaredSize.of(format, in: input.bytes)
        } catch {
            throw ImagingError(.decodeFailed, detail: "\(format.rawValue) container: \(error)")
        }
        if let declared, declared.pixelCount > limits.maxPixels {
            throw ImagingError(
                .tooManyPixels,
                detail: "header declares \(declared.width)x\(declared.height) > \(limits.maxPixels) pixels")
        }
        if format == .jpeg, JPEGScans.count(in: input.bytes, stoppingAfter: limits.maxJPEGScans) > limits.maxJPEGScans {
            throw ImagingError(.tooManyScans, detail: "JPEG with more than \(limits.maxJPEGScans) scans")
        }
    }
}
