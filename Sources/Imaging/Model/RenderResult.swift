import CropGeometry

/// One encoded square.
public struct Rendition: Sendable, Hashable {
    public var size: Int
    public var format: AvatarFormat
    public var data: [UInt8]

    public init(size: Int, format: AvatarFormat, data: [UInt8]) {
        self.size = size
        self.format = format
        self.data = data
    }
}

/// Wall-clock time of one render, in the words of the job's stages (`JobStage`, docs/ARCHITECTURE.md §3): what the
/// renderer measured of its probe, render and encode, wherever it ran (in a render helper, for a worker's job).
public struct RenderTimings: Sendable, Hashable, Codable {
    /// Header read and limit checks (`AvatarRenderer.probe`).
    public var probe: Duration = .zero
    /// `AvatarRenderer.render` less its `encode`: the face frame and detection, crop planning, the pixel pipeline
    /// (load, crop, colour, flatten, resize) up to the in-memory square, and a retry on the memory fallback.
    public var render: Duration = .zero
    /// Orientation, metadata and encoding of every rendition, then the BlurHash (when requested).
    public var encode: Duration = .zero
    /// The encoders' share of `encode`, per format: every rendition of that format, every size.
    public var encodeByFormat: [AvatarFormat: Duration] = [:]
    /// The same encodes' CPU time on the render's thread (the bench's figure: docs/FORMATS.md).
    public var encodeCPUByFormat: [AvatarFormat: Duration] = [:]
    /// The probe and the render together (not the caller's time between them).
    public var total: Duration = .zero

    public init() {}

    /// The stages in milliseconds, keyed by their names above, and each format's encoders as "encode_{format}".
    public var milliseconds: [String: Double] {
        var stages = [
            "probe": probe.milliseconds, "render": render.milliseconds, "encode": encode.milliseconds,
            "total": total.milliseconds,
        ]
        for (format, time) in encodeByFormat { stages["encode_\(format.rawValue)"] = time.milliseconds }
        return stages
    }
}

extension Duration {
    /// This duration in (fractional) milliseconds.
    var milliseconds: Double {
        let parts = components
        return Double(parts.seconds) * 1000 + Double(parts.attoseconds) / 1e15
    }
}

/// Everything one render produced.
public struct RenderResult: Sendable {
    public var header: ImageHeader
    public var plan: CropPlan
    /// The size actually decoded (oriented), after shrink-on-load or the fallback's reduction.
    public var decodeSize: PixelSize
    /// The shrink-on-load factor used (1 when none).
    public var shrinkFactor: Int
    /// Rendered from a thumbnail-resolution decode (memory fallback).
    public var fallbackUsed: Bool
    /// Which decoder produced the pixels (and why libvips' when it was).
    public var decoder: DecoderPath
    /// The avatar in its primary format (`RenditionFormats.primary`).
    public var avatar: Rendition
    /// Every other rendition: the avatar in its other formats, then each extra size (ascending) in each of its
    /// formats, formats in the order asked.
    public var extras: [Rendition]
    public var blurHash: String?
    public var timings: RenderTimings

    /// Every format written, each once, in the order first written (the avatar's primary first).
    public var formats: [AvatarFormat] {
        ([avatar] + extras).map(\.format).reduce(into: []) { formats, format in
            if !formats.contains(format) { formats.append(format) }
        }
    }
    /// The faces looked for and what the face rule did; `nil` when none were looked for (a pose, or the centred
    /// default).
    public var faces: FaceReport?

    public init(
        header: ImageHeader, plan: CropPlan, decodeSize: PixelSize, shrinkFactor: Int, fallbackUsed: Bool,
        avatar: Rendition, extras: [Rendition], blurHash: String?, timings: RenderTimings, decoder: DecoderPath,
        faces: FaceReport? = nil
    ) {
        self.header = header
        self.plan = plan
        self.decodeSize = decodeSize
        self.shrinkFactor = shrinkFactor
        self.fallbackUsed = fallbackUsed
        self.decoder = decoder
        self.avatar = avatar
        self.extras = extras
        self.blurHash = blurHash
        self.timings = timings
        self.faces = faces
    }
}
