import Clcms2

/// An lcms2 transform from an RGB ICC profile to another, 8-bit interleaved RGB in and out, built the
/// way libvips 8.14's `icc_transform` builds its own (device to device in one lcms2 transform, relative
/// colorimetric intent, no black-point compensation, `cmsFLAGS_NOCACHE`), so that applying it gives
/// libvips' pixels. Without lcms2's one-pixel cache `cmsDoTransform` keeps no state, so one transform
/// may be applied from several threads at once; the transform is freed when the last reference goes.
final class ICCTransform: @unchecked Sendable {  // an immutable lcms2 handle, see above
    /// The largest pixel count one `apply` takes (lcms2 counts pixels in 32 bits).
    static let maxPixels = Int(UInt32.max)

    private let handle: cmsHTRANSFORM

    /// Nil when lcms2 refuses `input` (damaged, or not an RGB profile that supports the relative
    /// colorimetric intent as input) or `output`, or cannot link them.
    init?(from input: [UInt8], to output: [UInt8]) {
        let context = Self.context.handle
        guard let source = Self.openProfile(input, context: context) else { return nil }
        defer { cmsCloseProfile(source) }
        guard cmsGetColorSpace(source) == cmsSigRgbData,
            cmsIsIntentSupported(
                source, cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC), cmsUInt32Number(LCMS_USED_AS_INPUT))
                != 0,
            let destination = Self.openProfile(output, context: context)
        else { return nil }
        defer { cmsCloseProfile(destination) }
        guard cmsGetColorSpace(destination) == cmsSigRgbData,
            let handle = cmsCreateTransformTHR(
                context, source, clcms2_type_rgb_8, destination, clcms2_type_rgb_8,
                cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC), cmsUInt32Number(cmsFLAGS_NOCACHE))
        else { return nil }
        self.handle = handle
    }

    deinit {
        cmsDeleteTransform(handle)
    }

    /// Transforms `count` pixels (3 bytes each) from `source` into `destination`, which must hold as many.
    func apply(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer, count: Int) {
        precondition(count >= 0 && count <= Self.maxPixels, "pixel count out of range")
        precondition(source.count >= count * 3 && destination.count >= count * 3, "buffers too small")
        guard count > 0, let input = source.baseAddress, let output = destination.baseAddress else { return }
        cmsDoTransform(handle, input, output, cmsUInt32Number(count))
    }

    private static func openProfile(_ bytes: [UInt8], context: cmsContext?) -> cmsHPROFILE? {
        guard !bytes.isEmpty, bytes.count <= Int(UInt32.max) else { return nil }
        return bytes.withUnsafeBytes { raw in
            cmsOpenProfileFromMemTHR(context, raw.baseAddress, cmsUInt32Number(raw.count))
        }
    }

    /// lcms2's own context, whose error handler drops the message: libvips sets the global handler to
    /// one that writes into libvips' error buffer, and a profile refused here is a normal outcome (the
    /// render falls back on libvips' path), not an error of whatever libvips operation runs next.
    private struct Context: @unchecked Sendable {  // created once, never freed, only read
        let handle: cmsContext?
    }

    private static let context: Context = {
        let handle = cmsCreateContext(nil, nil)
        cmsSetLogErrorHandlerTHR(handle) { _, _, _ in }
        return Context(handle: handle)
    }()
}
