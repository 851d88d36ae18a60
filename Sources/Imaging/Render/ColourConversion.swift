import CropGeometry
import Logging

/// docs/ARCHITECTURE.md §2 step 5: any accepted input becomes opaque 3-band 8-bit sRGB.
enum ColourConversion {
    /// Converts to sRGB through the embedded ICC profile when there is one (CMYK, Display P3,
    /// Adobe RGB, ProPhoto, grey), libvips' CMYK profile for CMYK without one, and a plain
    /// colourspace conversion otherwise (grey, 16-bit); then flattens alpha onto `background`.
    static func opaqueSRGB(_ image: VImage, background: RGBColor, logger: Logger) throws(VipsFailure) -> VImage {
        guard image.hasAlpha, image.bands > 1 else {
            return try toSRGB(image, logger: logger).labelledSRGB()
        }
        let colour = try toSRGB(image.extractBands(0, count: image.bands - 1), logger: logger)
        var alpha = try image.extractBands(image.bands - 1)
        if !alpha.isUchar {
            alpha = try alpha.castToUchar()
        }
        return try uchar(colour.bandJoin(alpha).flatten(background: background)).labelledSRGB()
    }

    /// The cached lcms2 transform to sRGB for an opaque 3-band 8-bit RGB image with an embedded profile
    /// lcms2 accepts as RGB; nil for every other image (CMYK, grey, 16-bit, alpha, no profile, a profile
    /// refused), which `opaqueSRGB` converts. libvips 8.14's `icc_transform` links the same profiles
    /// with the same lcms2 settings, so `applying` it gives the pixels `opaqueSRGB` would, without
    /// parsing the profiles and linking a transform again on every render.
    static func cachedTransform(for image: VImage, in cache: ICCTransformCache) -> ICCTransform? {
        guard !image.hasAlpha, image.bands == 3, image.isUchar, image.isRGB, let profile = image.iccProfile
        else { return nil }
        return cache.transform(for: profile)
    }

    /// `image`, evaluated into memory with 3 uchar bands, through `transform`: a new sRGB-labelled
    /// image in memory.
    static func applying(_ transform: ICCTransform, to image: VImage) throws(VipsFailure) -> VImage {
        precondition(image.bands == 3 && image.isUchar, "the cached transform takes 3-band 8-bit RGB")
        return try VImage.filling(
            width: image.width, height: image.height, bands: 3, maxPixels: ICCTransform.maxPixels,
            operation: "icc_transform"
        ) { (pixels) throws(VipsFailure) in
            try image.withMemoryPixels { source in
                transform.apply(source, into: pixels, count: image.width * image.height)
            }
        }
    }

    /// Colour bands only (no alpha) to 3-band uchar sRGB.
    static func toSRGB(_ image: VImage, logger: Logger) throws(VipsFailure) -> VImage {
        let isCMYK = image.isCMYK
        if image.hasICCProfile {
            do {
                return try threeBandUchar(
                    image.iccTransform(to: "srgb", inputProfile: isCMYK ? "cmyk" : nil, embedded: true))
            } catch {
                // A damaged or unusable profile: convert as if there were none rather than fail.
                logger.debug(
                    "embedded ICC profile unusable, converting without it",
                    metadata: [
                        "vips.operation": "\(error.operation)"
                    ])
            }
        }
        if isCMYK {
            return try threeBandUchar(image.iccTransform(to: "srgb", inputProfile: "cmyk", embedded: false))
        }
        if image.hasConvertibleColourspace {
            return try threeBandUchar(image.colourspaceSRGB())
        }
        return try threeBandUchar(image)
    }

    /// Whatever the conversion left (an unusual interpretation, 16-bit, extra bands): 3 uchar bands.
    private static func threeBandUchar(_ image: VImage) throws(VipsFailure) -> VImage {
        var result = try uchar(image)
        if result.bands == 1 || result.bands == 2 {
            let grey = result.bands == 1 ? result : try result.extractBands(0)
            result = try grey.bandJoin(grey).bandJoin(grey)
        } else if result.bands > 3 {
            result = try result.extractBands(0, count: 3)
        }
        return result
    }

    private static func uchar(_ image: VImage) throws(VipsFailure) -> VImage {
        guard !image.isUchar else { return image }
        return try image.castToUchar()
    }
}
