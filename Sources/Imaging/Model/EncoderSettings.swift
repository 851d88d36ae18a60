/// The lossy encoders' settings (docs/FORMATS.md, "Encoder settings"): the defaults are the fleet's
/// (`image.webp-quality`, `image.avif-quality`, `image.avif-speed`), chosen by `make bench`
/// (bench/RESULTS.md, "Avatar formats"). JPEG's quality is the request's (`RenderOptions.jpegQuality`).
public struct EncoderSettings: Sendable, Hashable, Codable {
    /// libwebp's quality, 1–100.
    public var webpQuality: Int
    /// libheif's AV1 quality (aom's cq-level, mapped), 1–100.
    public var avifQuality: Int
    /// aom's speed, 0 (slowest) to 9. Never libvips' or aom's default effort: on the bench photos speed 9 costs a
    /// quarter of speed 8's CPU (17 against 66 ms p50 per 512²) for 5 % more bytes, and speed 7 half again as
    /// much as 8 for none fewer (bench/RESULTS.md, "Avatar formats").
    public var avifSpeed: Int

    public static let defaultWebPQuality = 80
    public static let defaultAVIFQuality = 60
    public static let defaultAVIFSpeed = 9
    public static let qualities = 1...100
    public static let avifSpeeds = 0...9

    public init(
        webpQuality: Int = Self.defaultWebPQuality, avifQuality: Int = Self.defaultAVIFQuality,
        avifSpeed: Int = Self.defaultAVIFSpeed
    ) {
        self.webpQuality = webpQuality
        self.avifQuality = avifQuality
        self.avifSpeed = avifSpeed
    }

    func validate() throws(ImagingError) {
        guard Self.qualities.contains(webpQuality), Self.qualities.contains(avifQuality) else {
            throw ImagingError(.invalidRequest, detail: "WebP and AVIF qualities must be 1...100")
        }
        guard Self.avifSpeeds.contains(avifSpeed) else {
            throw ImagingError(.invalidRequest, detail: "AVIF speed must be 0...9")
        }
    }
}
