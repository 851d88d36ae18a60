import CropGeometry
import Logging

/// Renders avatars with libvips (docs/ARCHITECTURE.md §2). Synchronous and blocking: call it from Dispatch
/// worker threads, never from Swift's cooperative pool. Any number of renders may run at once.
public struct AvatarRenderer: Sendable {
    public var limits: ImageLimits
    private let logger: Logger

    public init(limits: ImageLimits = ImageLimits(), logger: Logger) {
        self.limits = limits
        self.logger = logger
    }

    /// Reads the header only (no pixel decode) and applies the limits: byte size, format,
    /// pixel count (decompression bombs), shortest side. Throws `.cancelled` if `cancellation` is
    /// already cancelled. The result is what `render` takes: the bytes are copied here, once, and
    /// the header is not read again.
    public func probe(_ bytes: [UInt8], cancellation: RenderCancellation? = nil) throws(ImagingError)
        -> ProbedImage
    {
        try probe(count: bytes.count, cancellation: cancellation) { () throws(ImagingError) in InputBytes(bytes) }
    }

    /// `probe` of the first `count` bytes of the file open on `descriptor`, read where they lie (mapped, not
    /// copied: a render helper's source memory file). The file must not shrink while the result lives.
    public func probe(mappingFile descriptor: Int32, count: Int, cancellation: RenderCancellation? = nil)
        throws(ImagingError) -> ProbedImage
    {
        try probe(count: count, cancellation: cancellation) { () throws(ImagingError) in
            count > 0 ? try InputBytes(mapping: descriptor, count: count) : InputBytes([])
        }
    }

    private func probe(
        count: Int, cancellation: RenderCancellation?, input makeInput: () throws(ImagingError) -> InputBytes
    ) throws(ImagingError) -> ProbedImage {
        let clock = ContinuousClock()
        let start = clock.now
        _ = try RenderResources.shared()
        try checkByteCount(count)
        try cancellation?.check(before: "probe")
        let input = try makeInput()
        let header = try HeaderReader.read(input, limits: limits)
        return ProbedImage(header: header, probeTime: clock.now - start, input: input)
    }

    /// Renders a probed image at full resolution, or from a thumbnail-resolution decode when
    /// `fallback` (the caller's memory admission, see `MemoryAdmission`) or `options.forceFallback`
    /// says so; retries once on the fallback if libvips runs out of memory at full resolution.
    /// `cancellation.cancel()`, from any thread, stops the render with `.cancelled`.
    ///
    /// The timings' `probe` is the probe's own time and `total` includes it (not the time the
    /// caller spent between the two calls); `render` is this call's time less its `encode`.
    public func render(
        _ probed: ProbedImage, input: CropInput, options: RenderOptions, fallback: Bool = false,
        cancellation: RenderCancellation? = nil
    ) throws(ImagingError) -> RenderResult {
        // The whole render holds a core of the worker's (`DecodeCores`), when the process has them.
        try DecodeCores.holdingCore { () throws(ImagingError) in
            try renderHoldingCore(
                probed, input: input, options: options, fallback: fallback, cancellation: cancellation)
        }
    }

    private func renderHoldingCore(
        _ probed: ProbedImage, input: CropInput, options: RenderOptions, fallback: Bool,
        cancellation: RenderCancellation?
    ) throws(ImagingError) -> RenderResult {
        let clock = ContinuousClock()
        let start = clock.now
        try options.validate()
        let resources = try RenderResources.shared()
        let cancellation = cancellation ?? RenderCancellation()
        try cancellation.check(before: "plan")
        // No pose: the face rule's square when it finds faces, else the centred one; a JPEG, a HEIF without a
        // thumbnail item or a WebP decoded once for both (`FaceFrame`), other photos through the detector's own
        // small decode.
        var input = input
        var faces: FaceReport?
        var frame: FaceFrame?
        let fallback = fallback || options.forceFallback
        if options.findsFaces(for: input) {
            if !fallback {
                frame = try FaceFrame.decode(
                    probed.input, header: probed.header, options: options, cancellation: cancellation)
            }
            let found = FaceFinder.find(probed.input, header: probed.header, rule: FaceRule(), frame: frame)
            faces = found.report
            if let choice = found.choice { input = choice.input }
            try cancellation.check(before: "plan")
        }
        var result = try renderRetrying(
            probed.input, header: probed.header, input: input, options: options, fallback: fallback, frame: frame,
            resources: resources, cancellation: cancellation)
        result.faces = faces
        let rendering = clock.now - start
        result.timings.render = rendering - result.timings.encode
        result.timings.probe = probed.probeTime
        result.timings.total = probed.probeTime + rendering
        return result
    }

    // MARK: - Steps

    private func checkByteCount(_ count: Int) throws(ImagingError) {
        guard count <= limits.maxBytes else {
            throw ImagingError(.tooLarge, detail: "\(count) bytes > \(limits.maxBytes)")
        }
    }

    private func renderRetrying(
        _ source: InputBytes, header: ImageHeader, input: CropInput, options: RenderOptions, fallback: Bool,
        frame: FaceFrame?, resources: RenderResources, cancellation: RenderCancellation
    ) throws(ImagingError) -> RenderResult {
        do {
            return try renderOnce(
                source, header: header, input: input, options: options, fallback: fallback, frame: frame,
                resources: resources, cancellation: cancellation)
        } catch  where error.code == .outOfMemory && !fallback {
            logger.warning("libvips ran out of memory, retrying on the thumbnail-resolution fallback")
            return try renderOnce(
                source, header: header, input: input, options: options, fallback: true, frame: nil,
                resources: resources, cancellation: cancellation)
        }
    }

    private func renderOnce(
        _ source: InputBytes, header: ImageHeader, input: CropInput, options: RenderOptions, fallback: Bool,
        frame: FaceFrame?, resources: RenderResources, cancellation: RenderCancellation
    ) throws(ImagingError) -> RenderResult {
        let clock = ContinuousClock()
        var timings = RenderTimings()

        let plan: CropPlan
        do {
            plan = try CropGeometry.plan(source: header.orientedSize, input: input, settings: options.settings)
        } catch {
            throw ImagingError.geometry(error)
        }

        let square = try CropPipeline.decode(
            source, header: header, plan: plan, options: options, fallback: fallback, frame: frame,
            transforms: resources.iccTransforms, logger: logger, cancellation: cancellation)
        try cancellation.check(before: "encode")
        let encoding = clock.now

        // One resize per size, one encode per format of it; the cancellation is looked at before each encode
        // (an encode itself runs to its end: the job's deadline kills the helper).
        var renditions: [Rendition] = []
        for (size, formats) in options.renditionSizes {
            let sized = try RenditionEncoder.resized(square.image, to: size)
            for format in formats {
                try cancellation.check(before: "encode")
                let (started, cpuStarted) = (clock.now, ThreadCPUTime.now)
                renditions.append(
                    try RenditionEncoder.encode(sized, format: format, options: options, resources: resources))
                timings.encodeByFormat[format, default: .zero] += clock.now - started
                timings.encodeCPUByFormat[format, default: .zero] += ThreadCPUTime.now - cpuStarted
            }
        }
        let avatar = renditions.removeFirst()
        let extras = renditions
        var blurHash: String?
        if options.blurHash { blurHash = try Self.blurHash(of: square.image) }
        timings.encode = clock.now - encoding

        return RenderResult(
            header: header, plan: plan, decodeSize: square.decodeSize, shrinkFactor: square.shrinkFactor,
            fallbackUsed: fallback, avatar: avatar, extras: extras, blurHash: blurHash, timings: timings,
            decoder: square.decoder)
    }

    /// BlurHash side: the hash only has 4×3 components, 32×32 samples are plenty.
    static let blurHashSampleSize = 32

    static func blurHash(of square: VImage) throws(ImagingError) -> String? {
        do {
            let small = try CropPipeline.resize(square, to: blurHashSampleSize)
            let pixels = try small.pixels()
            return BlurHash.encode(rgb: pixels, width: blurHashSampleSize, height: blurHashSampleSize)
        } catch {
            throw ImagingError.processing(error)
        }
    }
}
