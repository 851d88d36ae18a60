import CropGeometry

extension AvatarRenderer {
    /// Side of the photo `warmUp` renders: above any sensible `ImageLimits.minSide`.
    static let warmUpSide = 640
    /// Side of the avatar `warmUp` encodes.
    static let warmUpOutputSide = 64

    /// Renders a generated photo once (JPEG in, through libjpeg's region decoder; out in every `AvatarFormat`; a
    /// BlurHash; faces looked for when a face model is installed, `FaceDetectors`), loads libheif's plugins and links
    /// the colour transforms from `WellKnownProfiles`, so that libvips, libjpeg, lcms2, the PNG writer, libwebp,
    /// libheif and its plugins (decoders, and the AV1 encoder), OpenCV and their libraries are loaded and their
    /// one-time set-up done: after the helper's lockdown no file can be opened (docs/SECURITY.md). A render helper
    /// calls it before it locks itself down (docs/ARCHITECTURE.md §3, "Render helpers"). Returns what it rendered
    /// (the helpers rehearse their replies with it).
    @discardableResult public func warmUp() throws(ImagingError) -> RenderResult {
        let jpeg = try Self.warmUpPhoto()
        // libheif loads its plugins (libde265, dav1d, the AV1 encoder) from their directory at its first use: now,
        // while the helper may still read files.
        HEIFSupport.loadPlugins()
        // The transforms from the profiles most photos carry, linked once: a helper forked from here finds them.
        let resources = try RenderResources.shared()
        for profile in WellKnownProfiles.all(srgb: resources.srgbProfile) {
            _ = resources.iccTransforms.transform(for: profile)
        }
        // The avatar in every format (the extra size in the primary one only: the encoders are loaded by then), at
        // `warmUpOutputSide`: every encoder starts, and a helper (which serves one job) spends little on pixels no
        // job asked for.
        var options = RenderOptions(extraSizes: [32], blurHash: true, defaultCrop: .face)
        options.settings.outputSize = Self.warmUpOutputSide
        options.formats = RenditionFormats(avatar: AvatarFormat.allCases, extras: [.png])
        return try render(probe(jpeg), input: .centred, options: options)
    }

    /// Renders the generated photo as a job asks for its avatar (the avatar in PNG at its default side, one
    /// smaller size, a BlurHash, framed on faces): a helper forked at a quiet moment does it before it says `ready`,
    /// so that its job finds the pages a render writes already its own, its threads started and its code mapped,
    /// as in a helper that has rendered before (docs/ARCHITECTURE.md §3, "Render helpers"; what it gains:
    /// CHANGELOG.md, 2026-11-29). The photo is generated: no job's bytes.
    public func rehearse() throws(ImagingError) {
        _ = try render(probe(Self.warmUpPhoto()), input: .centred, options: Self.rehearsalOptions)
    }

    /// What `rehearse` asks for, as a job asks for its avatar: one smaller size (128) beside it, a BlurHash, framed on
    /// faces. The helpers' channel rehearses its messages with the same (`HelperCoding.rehearse`).
    public static let rehearsalOptions = RenderOptions(extraSizes: [128], blurHash: true, defaultCrop: .face)

    /// A `warmUpSide`-square JPEG of a gradient.
    private static func warmUpPhoto() throws(ImagingError) -> [UInt8] {
        let side = warmUpSide
        do {
            let image = try VImage.filling(
                width: side, height: side, bands: 3, maxPixels: side * side, operation: "warm-up"
            ) { pixels in
                for index in pixels.indices { pixels[index] = UInt8(truncatingIfNeeded: index / 3 % side) }
            }
            return try image.jpegData(quality: 90, strip: true)
        } catch {
            throw ImagingError.processing(error)
        }
    }
}
