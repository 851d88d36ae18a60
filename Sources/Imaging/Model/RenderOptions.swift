import CropGeometry

/// How to render one avatar.
public struct RenderOptions: Sendable, Hashable, Codable {
    /// The editor's parameters; `settings.outputSize` is the avatar's side.
    public var settings: EditorSettings
    /// The avatar's formats and the extra sizes' (each size is resized once and encoded once per format).
    public var formats: RenditionFormats
    /// JPEG quality 1–100 (JPEG output only).
    public var jpegQuality: Int
    /// WebP's and AVIF's settings.
    public var encoder: EncoderSettings
    /// What transparent areas become (the output is always opaque).
    public var background: RGBColor
    /// Further square sizes rendered from the same decode (e.g. 80 for lists).
    public var extraSizes: [Int]
    /// Also compute a BlurHash placeholder of the avatar.
    public var blurHash: Bool
    /// Render from a thumbnail-resolution decode even if memory would allow the full one.
    public var forceFallback: Bool
    /// Long edge the fallback decodes to (about; JPEG shrink-on-load is in powers of two).
    public var fallbackLongEdge: Int
    /// The square a request without a pose gets: on the faces found (`FaceFinder`), or centred. A posed request
    /// never looks for faces.
    public var defaultCrop: DefaultCrop
    /// Which decoders may run (`.automatic` unless a comparison forces libvips).
    @_spi(Benchmark) public var decoderPreference: DecoderPreference = .automatic

    /// Every size a render writes and its formats, in order: the avatar, then each extra size. The renditions are
    /// written so, size by size and format by format (`AvatarRenderer.render`), and a helper's reply must list them so
    /// (RenderHelpers' `ReplyCheck`).
    public var renditionSizes: [(size: Int, formats: [AvatarFormat])] {
        [(settings.outputSize, formats.avatar)] + extraSizes.map { ($0, formats.extras) }
    }

    public init(
        settings: EditorSettings = EditorSettings(), format: AvatarFormat = .png, jpegQuality: Int = 90,
        encoder: EncoderSettings = EncoderSettings(), background: RGBColor = .white, extraSizes: [Int] = [],
        blurHash: Bool = false, forceFallback: Bool = false,
        fallbackLongEdge: Int = 2560, defaultCrop: DefaultCrop = .centre
    ) {
        self.settings = settings
        self.formats = RenditionFormats(format)
        self.jpegQuality = jpegQuality
        self.encoder = encoder
        self.background = background
        self.extraSizes = extraSizes
        self.blurHash = blurHash
        self.forceFallback = forceFallback
        self.fallbackLongEdge = fallbackLongEdge
        self.defaultCrop = defaultCrop
    }

    /// Largest accepted output or extra size.
    public static let maxRenditionSize = 4096

    /// Whether a render of `input` looks for faces first: no pose, and the face rule as the default
    /// (docs/ARCHITECTURE.md §2, "Faces").
    func findsFaces(for input: CropInput) -> Bool { input == .centred && defaultCrop == .face }

    /// The side every rendition is derived from: the avatar or the largest extra size.
    var masterSize: Int { max(settings.outputSize, extraSizes.max() ?? 0) }

    func validate() throws(ImagingError) {
        let sizes = [settings.outputSize] + extraSizes
        guard sizes.allSatisfy({ (1...Self.maxRenditionSize).contains($0) }) else {
            throw ImagingError(.invalidRequest, detail: "output sizes must be 1...\(Self.maxRenditionSize)")
        }
        guard (1...100).contains(jpegQuality) else {
            throw ImagingError(.invalidRequest, detail: "JPEG quality must be 1...100")
        }
        let extrasProblem = extraSizes.isEmpty ? nil : RenditionFormats.problem(formats.extras)
        if let problem = RenditionFormats.problem(formats.avatar) ?? extrasProblem {
            throw ImagingError(.invalidRequest, detail: problem)
        }
        try encoder.validate()
        guard fallbackLongEdge >= settings.outputSize, fallbackLongEdge <= 16384 else {
            throw ImagingError(.invalidRequest, detail: "fallback long edge must be at least the output size")
        }
    }
}
