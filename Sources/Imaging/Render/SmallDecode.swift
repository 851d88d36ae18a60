/// The smallest decode of a probed image that still shows its faces, for the detector (docs/ARCHITECTURE.md §2,
/// "Faces"): through the loader of the format `FormatSniffer` found (never libvips' own sniffing), at the
/// format's cheapest reduction — JPEG's DCT scaling (1/2, 1/4, 1/8; at 1/8 a progressive file's DC scans alone,
/// `JPEGRegionDecoder.dcPreview`) and WebP's scaled decode down to about the canvas, a HEIF/AVIF's thumbnail item
/// (its primary image when it has none), a GIF's first frame — turned upright and resized to fit inside
/// `side × side`, as 3 bands of 8-bit sRGB (alpha flattened onto white).
enum SmallDecode {
    /// The short side a reduced decode keeps at least (when the image has it). libvips 8.14's loaders abort the
    /// process on an image they shrink to nothing (`jpegload` with `shrink` 4 of a 1 px wide JPEG fails its
    /// sanity assertion), and a face needs pixels anyway.
    static let minShortSide = 16

    static func upright(_ input: InputBytes, header: ImageHeader, fitting side: Int) throws(VipsFailure) -> VImage {
        let stored = header.storedSize
        let longEdge = max(stored.width, stored.height, 1)
        let shortEdge = max(min(stored.width, stored.height), 1)
        var image: VImage
        switch header.format {
        case .jpeg:
            // The largest DCT scaling that keeps the long edge at least the canvas.
            let shrink = [8, 4, 2].first { longEdge / $0 >= side && shortEdge / $0 >= minShortSide } ?? 1
            if shrink == 8, let preview = try dcPreview(input) {
                // Without the file's orientation tag: turned upright here, not by autorotate below.
                image = try CropPipeline.turnUpright(preview, Orientation(exif: header.orientation))
                return try fitted(image, side: side)
            }
            image = try VipsLoader.open(input, as: .jpeg, shrink: shrink)
        case .webp:
            let scale = min(1, max(Double(side) / Double(longEdge), Double(minShortSide) / Double(shortEdge)))
            image = try VipsLoader.open(input, as: .webp, webpScale: scale)
        case .heif:
            // libheif applies irot/imir: the image is as displayed.
            if let thumbnail = regionThumbnail(input, header: header) {
                image = thumbnail
            } else {
                image = try VipsLoader.openHEIFThumbnail(input)
            }
        case .png, .gif, .tiff:
            image = try VipsLoader.open(input, as: header.format)
        }
        if header.format != .heif {
            image = try image.autorotate()
        }
        return try fitted(image, side: side)
    }

    /// A HEIF's thumbnail item through the HEIF region decoder, when it takes the file and the item is there (as
    /// displayed); nil otherwise, or when it fails (libvips then tries). libvips 8.14's `heifload` with `thumbnail`
    /// decodes the item three times (its header, then its pixels twice): 40–50 ms of a 24 MP iPhone HEIC's 416 ×
    /// 312 item against 10–13 ms once.
    static func regionThumbnail(_ input: InputBytes, header: ImageHeader) -> VImage? {
        guard header.decoder == .heifRegion, let layout = header.heifLayout, let size = layout.thumbnailSize else {
            return nil
        }
        return try? HEIFRegionDecoder.decode(
            input, maxPixels: layout.storedSize.pixelCount, x: 0, y: 0, width: size.width, height: size.height,
            thumbnail: true, cancel: nil
        ).image
    }

    /// A progressive JPEG's 1/8 image from its DC scans, nil for any other JPEG (which libvips decodes).
    private static func dcPreview(_ input: InputBytes) throws(VipsFailure) -> VImage? {
        do {
            return try JPEGRegionDecoder.dcPreview(input)
        } catch {
            throw VipsFailure(operation: "jpeg dc preview", message: error.message)
        }
    }

    /// `image` (upright) resized to fit inside `side × side`, as 3 bands of 8-bit sRGB.
    static func fitted(_ upright: VImage, side: Int) throws(VipsFailure) -> VImage {
        var image = upright
        let scale = min(1, Double(side) / Double(image.width), Double(side) / Double(image.height))
        if scale < 1 {
            let width = max(1, Int((Double(image.width) * scale).rounded()))
            let height = max(1, Int((Double(image.height) * scale).rounded()))
            // Linear, not the avatar's Lanczos 3: the detector needs no sharper image, and on a 12 MP photo's
            // frame (about 1150 × 770) it takes 2.6 ms against 4.6 on one core.
            image = try image.resize(
                horizontal: Double(width) / Double(image.width), vertical: Double(height) / Double(image.height),
                kernel: .linear)
        }
        image = try image.colourspaceSRGB()
        if image.hasAlpha { image = try image.flatten(background: .white) }
        image = try image.castToUchar()
        if image.bands > 3 { image = try image.extractBands(0, count: 3) }
        return image
    }
}
