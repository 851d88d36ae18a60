import Cvips
import CvipsShim

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Owns one libvips `VipsImage` reference; `deinit` drops it. libvips images are immutable once built
/// (operations make new ones), so a handle is only ever used by the render that created it.
final class VImage {
    typealias Pointer = UnsafeMutablePointer<Cvips.VipsImage>

    let pointer: Pointer
    /// The encoded bytes the loader at the root of this pipeline reads from, if any.
    private let source: InputBytes?

    init(taking pointer: Pointer, source: InputBytes?) {
        self.pointer = pointer
        self.source = source
    }

    deinit {
        cvips_unref(pointer)
    }

    /// Runs a libvips operation with one output image and wraps the result.
    static func make(
        _ operation: @autoclosure () -> String,
        source: InputBytes?,
        _ body: (UnsafeMutablePointer<Pointer?>) -> Int32
    ) throws(VipsFailure) -> VImage {
        var out: Pointer?
        let result = body(&out)
        guard result == 0, let out else {
            if let out { cvips_unref(out) }
            throw VipsFailure.take(operation: operation())
        }
        return VImage(taking: out, source: source)
    }

    /// An operation on this image.
    func derive(
        _ operation: @autoclosure () -> String,
        _ body: (Pointer, UnsafeMutablePointer<Pointer?>) -> Int32
    ) throws(VipsFailure) -> VImage {
        try VImage.make(operation(), source: source) { out in body(pointer, out) }
    }

    // MARK: Header

    var width: Int { Int(vips_image_get_width(pointer)) }
    var height: Int { Int(vips_image_get_height(pointer)) }
    var bands: Int { Int(vips_image_get_bands(pointer)) }
    var bandFormat: VipsBandFormat { vips_image_get_format(pointer) }
    var interpretation: VipsInterpretation { vips_image_get_interpretation(pointer) }
    var interpretationName: String { String(cString: cvips_interpretation_nick(interpretation)) }
    var hasAlpha: Bool { vips_image_hasalpha(pointer) != 0 }
    var hasICCProfile: Bool { cvips_has_field(pointer, "icc-profile-data") != 0 }

    func intField(_ name: String) -> Int? {
        var value: Int32 = 0
        return cvips_get_int(pointer, name, &value) != 0 ? Int(value) : nil
    }

    var fieldNames: [String] {
        guard let names = cvips_field_names(pointer) else { return [] }
        defer { cvips_free_strv(names) }
        var result: [String] = []
        var index = 0
        while let name = names[index] {
            result.append(String(cString: name))
            index += 1
        }
        return result
    }

    var iccProfile: [UInt8]? {
        var length = 0
        guard let data = cvips_copy_icc_profile(pointer, &length) else { return nil }
        defer { cvips_free(data) }
        return [UInt8](UnsafeRawBufferPointer(start: data, count: length))
    }

    /// 8-bit unsigned samples.
    var isUchar: Bool { bandFormat == VIPS_FORMAT_UCHAR }
    /// 16-bit unsigned samples.
    var isUshort: Bool { bandFormat == VIPS_FORMAT_USHORT }
    var isCMYK: Bool { interpretation == VIPS_INTERPRETATION_CMYK }
    /// Labelled as RGB pixels (sRGB, or RGB in some other space: an embedded profile says which).
    var isRGB: Bool { interpretation == VIPS_INTERPRETATION_sRGB || interpretation == VIPS_INTERPRETATION_RGB }
    /// Whether libvips' `colourspace` knows how to convert from this image's interpretation.
    var hasConvertibleColourspace: Bool { vips_colourspace_issupported(pointer) != 0 }

    /// Bits per sample of the band format.
    var bitsPerSample: Int {
        switch bandFormat {
        case VIPS_FORMAT_UCHAR, VIPS_FORMAT_CHAR: 8
        case VIPS_FORMAT_USHORT, VIPS_FORMAT_SHORT: 16
        case VIPS_FORMAT_UINT, VIPS_FORMAT_INT, VIPS_FORMAT_FLOAT, VIPS_FORMAT_COMPLEX: 32
        default: 64
        }
    }

    // MARK: Evaluation

    /// Evaluates the pipeline into memory (the point where pixels are decoded).
    func copyMemory() throws(VipsFailure) -> VImage {
        guard let out = vips_image_copy_memory(pointer) else {
            throw VipsFailure.take(operation: "copy_memory")
        }
        // The copy no longer reads from the input bytes.
        return VImage(taking: out, source: nil)
    }

    /// The pixels of an image in memory (`copyMemory`'s result), band-interleaved, row by row, without
    /// a copy; valid only inside `body`.
    func withMemoryPixels<Result>(_ body: (UnsafeRawBufferPointer) -> Result) throws(VipsFailure) -> Result {
        // For an image that is not in memory, libvips would evaluate it into a buffer of its own here.
        guard let data = vips_image_get_data(pointer) else {
            throw VipsFailure.take(operation: "image_get_data")
        }
        let count = width * height * bands * (bitsPerSample / 8)
        return withExtendedLifetime(self) { body(UnsafeRawBufferPointer(start: data, count: count)) }
    }

    /// The pixels, band-interleaved, row by row.
    func pixels() throws(VipsFailure) -> [UInt8] {
        try withPixels { [UInt8]($0) }
    }

    /// Evaluates the image and calls `body` with its pixels, band-interleaved, row by row, without
    /// copying them; the buffer is freed when `body` returns (a body that can fail returns a `Result`).
    func withPixels<Value>(_ body: (UnsafeRawBufferPointer) -> Value) throws(VipsFailure) -> Value {
        var length = 0
        guard let data = cvips_write_to_memory(pointer, &length) else {
            throw VipsFailure.take(operation: "write_to_memory")
        }
        defer { cvips_free(data) }
        return body(UnsafeRawBufferPointer(start: data, count: length))
    }

    /// libvips started before a new image is made over `pixels` (`Vips.requireStarted`); they are freed if it cannot.
    private static func requireStarted(freeingOnFailure pixels: UnsafeMutableRawPointer) throws(VipsFailure) {
        do throws(VipsFailure) { try Vips.requireStarted("new_from_memory") } catch {
            free(pixels)
            throw error
        }
    }

    /// An image over interleaved 8-bit pixels allocated with `malloc`, without a copy: the image owns
    /// them and frees them when it goes (also when this throws). 1 band is grey, 3 are sRGB.
    static func takingPixels(
        _ pixels: UnsafeMutableRawPointer, count: Int, width: Int, height: Int, bands: Int
    ) throws(VipsFailure) -> VImage {
        try requireStarted(freeingOnFailure: pixels)
        let interpretation = bands < 3 ? VIPS_INTERPRETATION_B_W : VIPS_INTERPRETATION_sRGB
        guard
            let pointer = cvips_image_take_pixels(
                pixels, count, Int32(width), Int32(height), Int32(bands), interpretation)
        else { throw VipsFailure.take(operation: "new_from_memory") }
        return VImage(taking: pointer, source: nil)
    }

    /// A `width` × `height` image of `bands` interleaved 8-bit bands whose pixels `fill` writes into a buffer the
    /// image then owns (freed with it, or here if `fill` throws or the image cannot be made). At most
    /// `maxPixels` pixels.
    static func filling(
        width: Int, height: Int, bands: Int, maxPixels: Int, operation: String,
        _ fill: (UnsafeMutableRawBufferPointer) throws(VipsFailure) -> Void
    ) throws(VipsFailure) -> VImage {
        let count = width * height
        guard count <= maxPixels, let buffer = malloc(max(1, count * bands)) else {
            throw VipsFailure(operation: operation, message: "out of memory for \(count) pixels")
        }
        do {
            try fill(UnsafeMutableRawBufferPointer(start: buffer, count: count * bands))
        } catch {
            free(buffer)
            throw error
        }
        // The image takes the buffer over (and frees it if it cannot be made).
        return try takingPixels(buffer, count: count * bands, width: width, height: height, bands: bands)
    }

    /// Sets libvips' kill flag: an evaluation reading from this image stops at its next region request (a plain
    /// field write libvips polls, safe from any thread while the image is alive).
    func kill() {
        vips_image_set_kill(pointer, 1)
    }

    /// An image over interleaved 16-bit RGB(A) samples (native order) allocated with `malloc`, without
    /// a copy, interpreted as libvips' `rgb16`; it owns and frees them as `takingPixels` does.
    static func takingSixteenBitPixels(
        _ pixels: UnsafeMutableRawPointer, count: Int, width: Int, height: Int, bands: Int
    ) throws(VipsFailure) -> VImage {
        try requireStarted(freeingOnFailure: pixels)
        guard
            let pointer = cvips_image_take_samples(
                pixels, count, Int32(width), Int32(height), Int32(bands), VIPS_FORMAT_USHORT,
                VIPS_INTERPRETATION_RGB16)
        else { throw VipsFailure.take(operation: "new_from_memory") }
        return VImage(taking: pointer, source: nil)
    }
}
