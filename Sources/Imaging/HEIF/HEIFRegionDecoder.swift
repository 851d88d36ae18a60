import CHEIFRegion
import CropGeometry

/// libheif through `CHEIFRegion`: a HEIF/AVIF primary image's layout, and the pixels of one
/// rectangle of it in stored orientation, decoded tile by tile (docs/ARCHITECTURE.md §2 step 3). The
/// only file that imports the C module.
enum HEIFRegionDecoder {
    /// What the file's boxes say about the primary image, read without decoding a pixel.
    struct Layout: Sendable, Hashable {
        /// The coded image's size (`ispe`), before `irot`/`imir`.
        var storedSize: PixelSize
        /// The size libheif (and so libvips) displays.
        var displaySize: PixelSize
        /// `irot` then `imir` as an EXIF orientation: how the stored pixels are turned upright. Nil
        /// when a transformation has no EXIF equivalent here (a clean-aperture crop).
        var orientation: Orientation?
        /// Grid columns and rows (1 × 1: one coded image) and the tile size.
        var columns: Int
        var rows: Int
        var tileSize: PixelSize
        /// Luma bits per sample.
        var bitDepth: Int
        var hasAlpha: Bool
        /// The largest thumbnail item, as displayed; nil when none.
        var thumbnailSize: PixelSize?

        var isGrid: Bool { columns * rows > 1 }

        /// The tiles a stored-orientation rectangle touches (one for a non-grid image).
        func tiles(touching crop: PixelCrop) -> Int {
            guard isGrid else { return 1 }
            let columns = (crop.x + crop.side - 1) / tileSize.width - crop.x / tileSize.width + 1
            let rows = (crop.y + crop.side - 1) / tileSize.height - crop.y / tileSize.height + 1
            return columns * rows
        }
    }

    struct Failure: Error, Sendable {
        enum Kind: Sendable {
            /// libheif refused the data, or the layout does not add up (tiles against `ispe`).
            case corrupt
            case outOfMemory
            case cancelled
            /// Outside what the region decoder handles (libvips decodes it).
            case unsupported
            /// A security limit: libheif's, or the layout's checks.
            case limit
        }

        var kind: Kind
        var message: String

        /// The render's error for it; nil when the decoder declined the file (libvips decodes it then).
        var imagingError: ImagingError? {
            switch kind {
            case .unsupported: nil
            case .cancelled: ImagingError(.cancelled, detail: "decode stopped: \(message)")
            case .outOfMemory: ImagingError(.outOfMemory, detail: "heif region: \(message)")
            case .limit: ImagingError(.tooManyPixels, detail: "heif region: \(message)")
            case .corrupt: ImagingError(.decodeFailed, detail: "heif region: \(message)")
            }
        }
    }

    /// The decoded rectangle as a libvips image over the decoder's buffer (no copy), with the file's
    /// colour profile attached (its ICC profile, or the one its nclx box stands for).
    struct Region {
        var image: VImage
        var tiles: Int
        /// Of `tiles`, those turned into RGB by `CHEIFRegion` (4:2:0 without alpha), not by libheif.
        var convertedTiles: Int
        /// Threads that decoded tiles: the caller's and the extra ones that got a decode core.
        var threads: Int
    }

    /// Most tiles a grid may have (a 100 MP photo in 256 × 256 tiles has 1 526).
    static let maxTiles = 4096

    /// Reads the primary image's layout, under libheif's security limits tightened to `maxPixels`.
    static func layout(of input: InputBytes, maxPixels: Int) throws(Failure) -> Layout {
        try withFile(input, maxPixels: maxPixels) { _, info throws(Failure) in layout(info) }
    }

    /// A crop's square in the stored image box-shrunk by `factor` (`ShrinkOnLoad.boxShrunkSize`), with
    /// boxes aligned to the *displayed* image's origin: the square libvips' path cuts from the upright
    /// image shrunk alike, turned into stored orientation pixel for pixel.
    struct ShrunkRegion: Sendable {
        /// In pixels of the shrunk stored image.
        var crop: PixelCrop
        /// The shrunk stored image.
        var decoded: PixelSize
        /// Where the boxes start in stored pixels (0, or the size modulo `factor` along an axis the
        /// orientation reverses).
        var origin: (x: Int, y: Int)

        init(plan: CropPlan, orientation: Orientation, stored: PixelSize, factor: Int) {
            decoded = ShrinkOnLoad.boxShrunkSize(stored, factor: factor)
            let display = orientation.orientedSize(of: stored)
            let upright = CropPipeline.storedCrop(
                plan: plan, orientation: .upright, stored: display, decoded: orientation.orientedSize(of: decoded))
            crop = orientation.storedCrop(upright, stored: decoded)
            origin = Self.origin(orientation: orientation, stored: stored, factor: factor)
        }

        /// Where the boxes start in stored pixels for any square of an image `stored` in `orientation` shrunk by
        /// `factor`: the displayed origin's pixel, which at the far edge of an axis the orientation reverses.
        static func origin(orientation: Orientation, stored: PixelSize, factor: Int) -> (x: Int, y: Int) {
            let corner = orientation.storedCrop(PixelCrop(x: 0, y: 0, side: 1), stored: stored)
            return (corner.x == 0 ? 0 : stored.width % factor, corner.y == 0 ? 0 : stored.height % factor)
        }
    }

    /// Decodes the stored-orientation rectangle `crop` of the primary image box-shrunk by `shrink` (crop
    /// in shrunk pixels, boxes from `origin`: `ShrunkRegion`), or (`thumbnail`) the displayed-orientation
    /// rectangle of its largest thumbnail. `cancel` is polled between tiles. `libheifConversion` has
    /// libheif turn every decoded tile into RGB whole (the reference for the conversion of only the
    /// region's pixels that 4:2:0 images without alpha otherwise get). A grid's tiles also decode on the idle ones of
    /// `cores` (`DecodeCores`).
    static func decode(
        _ input: InputBytes, maxPixels: Int, crop: PixelCrop, shrink: Int = 1, origin: (x: Int, y: Int) = (0, 0),
        thumbnail: Bool, libheifConversion: Bool = false, cancel: DecodeCancelFlag?,
        cores: DecodeCores? = DecodeCores.installed
    ) throws(Failure) -> Region {
        try decode(
            input, maxPixels: maxPixels, x: crop.x, y: crop.y, width: crop.side, height: crop.side, shrink: shrink,
            origin: origin, thumbnail: thumbnail, libheifConversion: libheifConversion, cancel: cancel, cores: cores)
    }

    /// As `decode(crop:)`, for a rectangle: `width × height` shrunk pixels at `x, y`.
    static func decode(
        _ input: InputBytes, maxPixels: Int, x: Int, y: Int, width: Int, height: Int, shrink: Int = 1,
        origin: (x: Int, y: Int) = (0, 0), thumbnail: Bool, libheifConversion: Bool = false, cancel: DecodeCancelFlag?,
        cores: DecodeCores? = DecodeCores.installed
    ) throws(Failure) -> Region {
        try withFile(input, maxPixels: maxPixels) { file, info throws(Failure) in
            var result = cheif_region_result()
            let status = withExtendedLifetime((cancel, cores)) {
                let threads = cores?.request()
                var request = cheif_region_request(
                    x: Int32(x), y: Int32(y), width: Int32(width), height: Int32(height),
                    shrink: Int32(shrink), origin_x: Int32(origin.x), origin_y: Int32(origin.y),
                    thumbnail: thumbnail ? 1 : 0, libheif_conversion: libheifConversion ? 1 : 0,
                    cancel: cancel.map { UnsafePointer($0.pointer) }, cores: threads?.cores,
                    extra_threads: threads?.extraThreads ?? 0)
                return cheif_decode_region(file, &request, &result)
            }
            guard status == CHEIF_OK, let pixels = result.pixels else {
                throw Failure(kind: kind(of: status), message: cMessage(&result.message))
            }
            let image: VImage
            do throws(VipsFailure) {
                // The image takes the buffer over (and frees it if it cannot be made).
                let (count, width, height, bands) =
                    (result.length, Int(result.width), Int(result.height), Int(result.bands))
                if result.sixteen_bit != 0 {
                    image = try VImage.takingSixteenBitPixels(
                        pixels, count: count, width: width, height: height, bands: bands)
                } else {
                    image = try VImage.takingPixels(pixels, count: count, width: width, height: height, bands: bands)
                }
            } catch {
                throw Failure(kind: .outOfMemory, message: "\(error.operation): \(error.message)")
            }
            if let profile = try profile(file, info) {
                profile.withUnsafeBytes { image.attachICCProfile($0) }
            }
            return Region(
                image: image, tiles: Int(result.tiles), convertedTiles: Int(result.converted_tiles),
                threads: Int(result.threads))
        }
    }

    /// The memory fallback's crop in the file's thumbnail item (displayed orientation) and the
    /// thumbnail's size, when the thumbnail has the image's shape and the crop in it is at least
    /// `minSide` pixels; nil otherwise (the fallback then decodes the tiles at full size).
    static func thumbnailCrop(layout: Layout, plan: CropPlan, minSide: Int) -> (crop: PixelCrop, size: PixelSize)? {
        guard let thumbnail = layout.thumbnailSize else { return nil }
        let display = layout.displaySize
        let sx = Double(thumbnail.width) / Double(display.width)
        let sy = Double(thumbnail.height) / Double(display.height)
        // The same shape, within a pixel of rounding.
        guard abs(sx * Double(display.height) - Double(thumbnail.height)) <= 1 else { return nil }
        let side = min(Int((plan.crop.side * min(sx, sy)).rounded()), thumbnail.width, thumbnail.height)
        guard side >= minSide else { return nil }
        let x = min(max(Int((plan.crop.x * sx).rounded()), 0), thumbnail.width - side)
        let y = min(max(Int((plan.crop.y * sy).rounded()), 0), thumbnail.height - side)
        return (PixelCrop(x: x, y: y, side: side), thumbnail)
    }

    /// libheif's version ("1.19.7") and its number (major, minor, patch).
    static var libraryVersion: (text: String, major: Int, minor: Int, patch: Int) {
        let number = cheif_library_version_number()
        return (
            String(cString: cheif_library_version()), Int(number >> 24), Int((number >> 16) & 0xFF),
            Int((number >> 8) & 0xFF)
        )
    }

    // MARK: - Parts

    private static func withFile<Value>(
        _ input: InputBytes, maxPixels: Int, _ body: (OpaquePointer, inout cheif_info) throws(Failure) -> Value
    ) throws(Failure) -> Value {
        var limits = cheif_limits(max_pixels: UInt64(max(1, maxPixels)), max_tiles: UInt32(maxTiles))
        var info = cheif_info()
        var file: OpaquePointer?
        let status = cheif_open(input.base.assumingMemoryBound(to: UInt8.self), input.count, &limits, &file, &info)
        guard status == CHEIF_OK, let file else {
            throw Failure(kind: kind(of: status), message: cMessage(&info.message))
        }
        defer { cheif_close(file) }
        return try body(file, &info)
    }

    private static func layout(_ info: cheif_info) -> Layout {
        let thumbnail = PixelSize(width: Int(info.thumbnail_width), height: Int(info.thumbnail_height))
        return Layout(
            storedSize: PixelSize(width: Int(info.width), height: Int(info.height)),
            displaySize: PixelSize(width: Int(info.display_width), height: Int(info.display_height)),
            orientation: orientation(info), columns: Int(info.columns), rows: Int(info.rows),
            tileSize: PixelSize(width: Int(info.tile_width), height: Int(info.tile_height)),
            bitDepth: Int(info.bits), hasAlpha: info.has_alpha != 0,
            thumbnailSize: thumbnail.width > 0 && thumbnail.height > 0 ? thumbnail : nil)
    }

    /// The transformations, in libheif's order, composed into one EXIF orientation.
    static func orientation(_ info: cheif_info) -> Orientation? {
        let transforms = withUnsafeBytes(of: info.transforms) { raw in
            Array(raw.bindMemory(to: cheif_transform.self).prefix(Int(info.transform_count)))
        }
        var orientation = Orientation.upright
        for transform in transforms {
            switch transform.kind {
            case CHEIF_TRANSFORM_ROTATE:
                for _ in 0..<Int(transform.value) { orientation = orientation.followed(by: .anticlockwise90) }
            case CHEIF_TRANSFORM_MIRROR:
                orientation = orientation.followed(by: transform.value == 1 ? .mirrorLeftRight : .mirrorTopBottom)
            default:
                return nil
            }
        }
        return orientation
    }

    /// The ICC profile, or the one nclx stands for; nil when neither.
    private static func profile(_ file: OpaquePointer, _ info: cheif_info) throws(Failure) -> [UInt8]? {
        if info.icc_length > 0 {
            var bytes = [UInt8](repeating: 0, count: info.icc_length)
            let status = bytes.withUnsafeMutableBufferPointer { buffer in
                cheif_copy_icc(file, buffer.baseAddress, buffer.count)
            }
            guard status == CHEIF_OK else { throw Failure(kind: .corrupt, message: "colour profile unreadable") }
            return bytes
        }
        guard info.has_nclx != 0 else { return nil }
        let chromaticities = withUnsafeBytes(of: info.nclx_chromaticities) { Array($0.bindMemory(to: Float.self)) }
        return NCLXProfile.profile(
            primaries: Int(info.nclx_primaries), transfer: Int(info.nclx_transfer), chromaticities: chromaticities)
    }

    private static func kind(of status: cheif_status) -> Failure.Kind {
        switch status {
        case CHEIF_NO_MEMORY: .outOfMemory
        case CHEIF_CANCELLED: .cancelled
        case CHEIF_UNSUPPORTED: .unsupported
        case CHEIF_LIMIT: .limit
        default: .corrupt
        }
    }
}
