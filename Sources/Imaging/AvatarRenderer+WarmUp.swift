import CropGeometry

extension AvatarRenderer {
    /// Side of the photo `warmUp` renders: above any sensible `ImageLimits.minSide`.
    static let warmUpSide = 640
    /// Side of the avatar `warmUp` encodes.
    static let warmUpOutputSide = 64

    /// Renders a generated photo once (JPEG in, through libjpeg's region decoder; out in every `AvatarFormat`; a
    /// BlurHash; faces looked for when a face model is installed, `FaceDetectors`), and loads libheif's plugins, so
    /// that libvips, libjpeg, lcms2's sRGB transform, the PNG writer, libwebp, libheif and its plugins (decoders, and
    /// the AV1 encoder), OpenCV and their libraries are loaded and their one-time set-up done: after the helper's
    /// lockdown no file can be opened (docs/SECURITY.md). A render helper calls it before it locks itself down
    /// (docs/ARCHITECTURE.md §3, "Render helpers").
    public func warmUp() throws(ImagingError) {
        let side = Self.warmUpSide
        let jpeg: [UInt8]
        do {
            let image = try VImage.filling(
                width: side, height: side, bands: 3, maxPixels: side * side, operation: "warm-up"
            ) { pixels in
                for index in pixels.indices { pixels[index] = UInt8(truncatingIfNeeded: index / 3 % side) }
            }
            jpeg = try image.jpegData(quality: 90, strip: true)
        } catch {
            throw ImagingError.processing(error)
        }
        // libheif loads its plugins (libde265, dav1d, the AV1 encoder) from their directory at its first use: now,
        // while the helper may still read files.
        HEIFSupport.loadPlugins()
        // The avatar in every format (the extra size in the primary one only: the encoders are loaded by then), at
        // `warmUpOutputSide`: every encoder starts, and a helper (which serves one job) spends little on pixels no
        // job asked for.
        var options = RenderOptions(extraSizes: [32], blurHash: true, defaultCrop: .face)
        options.settings.outputSize = Self.warmUpOutputSide
        options.formats = RenditionFormats(avatar: AvatarFormat.allCases, extras: [.png])
        _ = try render(probe(jpeg), input: .centred, options: options)
    }
}
