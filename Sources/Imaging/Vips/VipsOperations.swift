import CropGeometry
import Cvips
import CvipsShim

/// A clockwise rotation by a multiple of 90°.
enum QuarterTurn: Sendable {
    case clockwise90, clockwise180, clockwise270
}

/// The libvips operations the renderer uses, each through its `cvips_` wrapper.
extension VImage {
    func extractArea(left: Int, top: Int, width: Int, height: Int) throws(VipsFailure) -> VImage {
        try derive("extract_area") { input, out in
            cvips_extract_area(input, out, Int32(left), Int32(top), Int32(width), Int32(height))
        }
    }

    func extractBands(_ band: Int, count: Int = 1) throws(VipsFailure) -> VImage {
        try derive("extract_band") { input, out in cvips_extract_band(input, out, Int32(band), Int32(count)) }
    }

    func bandJoin(_ other: VImage) throws(VipsFailure) -> VImage {
        try withExtendedLifetime(other) { () throws(VipsFailure) -> VImage in
            try derive("bandjoin2") { input, out in cvips_bandjoin2(input, other.pointer, out) }
        }
    }

    /// Converts with lcms to `outputProfile`; with `embedded` the image's own profile is the input
    /// profile when it has one, else `inputProfile` (or libvips' default for the interpretation).
    func iccTransform(to outputProfile: String, inputProfile: String?, embedded: Bool, depth: Int = 8)
        throws(VipsFailure) -> VImage
    {
        try derive("icc_transform") { input, out in
            if let inputProfile {
                cvips_icc_transform(input, out, outputProfile, inputProfile, embedded ? 1 : 0, Int32(depth))
            } else {
                cvips_icc_transform(input, out, outputProfile, nil, embedded ? 1 : 0, Int32(depth))
            }
        }
    }

    func colourspace(_ space: VipsInterpretation) throws(VipsFailure) -> VImage {
        try derive("colourspace") { input, out in cvips_colourspace(input, out, space) }
    }

    /// libvips' own conversion to sRGB from whatever interpretation the image has.
    func colourspaceSRGB() throws(VipsFailure) -> VImage {
        try colourspace(VIPS_INTERPRETATION_sRGB)
    }

    func cast(_ format: VipsBandFormat, shift: Bool) throws(VipsFailure) -> VImage {
        try derive("cast") { input, out in cvips_cast(input, out, format, shift ? 1 : 0) }
    }

    /// To 8-bit samples; 16-bit ones keep their top 8 bits (a shift, not a clip).
    func castToUchar() throws(VipsFailure) -> VImage {
        try cast(VIPS_FORMAT_UCHAR, shift: isUshort)
    }

    func flatten(background: RGBColor) throws(VipsFailure) -> VImage {
        try derive("flatten") { input, out in
            cvips_flatten(input, out, Double(background.r), Double(background.g), Double(background.b), 255)
        }
    }

    /// A `resize` kernel (libvips widens it with the reduction, so either averages every source pixel).
    enum ResizeKernel {
        /// The avatar's.
        case lanczos3
        /// Cheaper, for an image only a detector looks at.
        case linear
    }

    func resize(horizontal: Double, vertical: Double, kernel: ResizeKernel = .lanczos3) throws(VipsFailure) -> VImage {
        let vipsKernel = kernel == .linear ? VIPS_KERNEL_LINEAR : VIPS_KERNEL_LANCZOS3
        return try derive("resize") { input, out in cvips_resize(input, out, horizontal, vertical, vipsKernel) }
    }

    /// An integer box shrink: each pixel the mean of `factor × factor` pixels, boxes from the origin.
    func shrink(by factor: Int) throws(VipsFailure) -> VImage {
        try derive("shrink") { input, out in cvips_shrink(input, out, Int32(factor)) }
    }

    func embed(x: Int, y: Int, width: Int, height: Int) throws(VipsFailure) -> VImage {
        try derive("embed") { input, out in
            cvips_embed(input, out, Int32(x), Int32(y), Int32(width), Int32(height), VIPS_EXTEND_COPY)
        }
    }

    /// Turns the image clockwise by a quarter turn, a half turn or three quarters.
    func rotate(_ turn: QuarterTurn) throws(VipsFailure) -> VImage {
        let angle: VipsAngle =
            switch turn {
            case .clockwise90: VIPS_ANGLE_D90
            case .clockwise180: VIPS_ANGLE_D180
            case .clockwise270: VIPS_ANGLE_D270
            }
        return try derive("rot") { input, out in cvips_rot(input, out, angle) }
    }

    func flipHorizontally() throws(VipsFailure) -> VImage {
        try derive("flip") { input, out in cvips_flip(input, out, VIPS_DIRECTION_HORIZONTAL) }
    }

    func autorotate() throws(VipsFailure) -> VImage {
        try derive("autorot") { input, out in cvips_autorot(input, out) }
    }

    func copy() throws(VipsFailure) -> VImage {
        try derive("copy") { input, out in cvips_copy(input, out) }
    }

    /// A copy labelled sRGB (after a conversion that produced 3 uchar sRGB bands).
    func labelledSRGB() throws(VipsFailure) -> VImage {
        try derive("copy") { input, out in cvips_copy_as_srgb(input, out) }
    }

    /// A copy that savers describe as `dotsPerInch` (PNG pHYs, JFIF density).
    func withResolution(dotsPerInch: Double) throws(VipsFailure) -> VImage {
        let perMillimetre = dotsPerInch / 25.4
        return try derive("copy") { input, out in
            cvips_copy_with_resolution(input, out, perMillimetre, perMillimetre)
        }
    }

    /// Attaches `profile` as the ICC profile of an image nothing else holds yet (a decoder's fresh output).
    func attachICCProfile(_ profile: UnsafeRawBufferPointer) {
        cvips_set_icc_profile(pointer, profile.baseAddress, profile.count)
    }

    /// A copy with the EXIF orientation field set (tests and synthetic images).
    func withOrientation(_ orientation: Int) throws(VipsFailure) -> VImage {
        let image = try copy()
        cvips_set_orientation(image.pointer, Int32(orientation))
        return image
    }

    // MARK: Savers

    func jpegData(quality: Int, strip: Bool) throws(VipsFailure) -> [UInt8] {
        try save("jpegsave_buffer") { input, buffer, length in
            cvips_jpegsave_buffer(input, buffer, length, Int32(quality), strip ? 1 : 0)
        }
    }

    private func save(
        _ operation: String,
        _ body: (Pointer, UnsafeMutablePointer<UnsafeMutableRawPointer?>, UnsafeMutablePointer<Int>) -> Int32
    ) throws(VipsFailure) -> [UInt8] {
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        let result = body(pointer, &buffer, &length)
        defer { if let buffer { cvips_free(buffer) } }
        try vipsCheck(result, operation)
        guard let buffer else { throw VipsFailure(operation: operation, message: "no output") }
        return [UInt8](UnsafeRawBufferPointer(start: buffer, count: length))
    }
}

/// The loaders avatar-cropper accepts, each configured for a decode and called by name: the format
/// comes from `FormatSniffer`, never from libvips' own sniffing (`vips_foreign_find_load_buffer`).
enum VipsLoader {
    /// How damaged input is treated: `.error` rejects truncated and corrupt data (libvips' default
    /// would decode it with a warning, leaving grey areas) but tolerates the harmless warnings many
    /// phone JPEGs trigger (e.g. extraneous bytes before a marker).
    static let failOn = VIPS_FAIL_ON_ERROR

    /// Opens `input` as `format` with sequential access: only the header is read until pixels are
    /// requested. `shrink` is the JPEG/WebP shrink-on-load factor; `webpScale` overrides it for WebP.
    static func open(
        _ input: InputBytes, as format: ImageFormat, shrink: Int = 1, webpScale: Double? = nil
    ) throws(VipsFailure) -> VImage {
        let buffer = UnsafeRawPointer(input.base)
        let count = input.count
        let operation = "\(format.rawValue)load_buffer"
        try Vips.requireStarted(operation)
        return try VImage.make(operation, source: input) { out in
            switch format {
            case .jpeg: cvips_jpegload_buffer(buffer, count, out, Int32(shrink), 1, failOn)
            case .png: cvips_pngload_buffer(buffer, count, out, 1, failOn)
            case .webp: cvips_webpload_buffer(buffer, count, out, webpScale ?? 1 / Double(shrink), 1, failOn)
            case .heif: cvips_heifload_buffer(buffer, count, out, 1, failOn)
            case .gif: cvips_gifload_buffer(buffer, count, out, 1, failOn)
            case .tiff: cvips_tiffload_buffer(buffer, count, out, 1, failOn)
            }
        }
    }

    /// Opens a HEIF/AVIF's thumbnail item (its primary image when it has none), as displayed: libheif applies
    /// `irot`/`imir`. The face detector's small decode (`SmallDecode`).
    static func openHEIFThumbnail(_ input: InputBytes) throws(VipsFailure) -> VImage {
        let buffer = UnsafeRawPointer(input.base)
        let count = input.count
        let operation = "heifload_buffer(thumbnail)"
        try Vips.requireStarted(operation)
        return try VImage.make(operation, source: input) { out in
            cvips_heifload_thumbnail_buffer(buffer, count, out, failOn)
        }
    }
}
