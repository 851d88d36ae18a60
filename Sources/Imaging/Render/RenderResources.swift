import Synchronization

/// What every render shares, made once per process from libvips' sRGB profile: the lcms2 transforms from
/// embedded RGB profiles to sRGB (`ICCTransformCache`, docs/ARCHITECTURE.md §2 step 5) and the PNG writer that
/// carries the profile, already compressed for its iCCP chunk (step 7). Their one owner: the renderer asks for
/// `shared()`, which starts libvips first if needed (`Vips`).
struct RenderResources: Sendable {
    /// libvips' built-in sRGB profile, embedded in every output.
    let srgbProfile: [UInt8]
    /// Transforms from embedded RGB profiles to `srgbProfile`, shared by every render.
    let iccTransforms: ICCTransformCache
    /// The PNG writer of every avatar.
    let pngWriter: PNGWriter

    init(srgbProfile: [UInt8]) {
        self.srgbProfile = srgbProfile
        self.iccTransforms = ICCTransformCache(output: srgbProfile)
        self.pngWriter = RenditionEncoder.pngWriter(srgbProfile: srgbProfile)
    }

    private static let made = Mutex<RenderResources?>(nil)

    /// The process's resources, made on first use.
    static func shared() throws(ImagingError) -> RenderResources {
        let library = try Vips.library()
        return made.withLock { made in
            if let made { return made }
            let resources = RenderResources(srgbProfile: library.srgbProfile)
            made = resources
            return resources
        }
    }
}
