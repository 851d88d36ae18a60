import CropGeometry
import Imaging

/// A helper's reply the worker refused (docs/SECURITY.md, "Replies are untrusted"): the helper is killed and its
/// job fails as `DECODE_FAILED` (what a helper taken over by its upload has earned), never the worker.
public struct RefusedReply: Error, Sendable, CustomStringConvertible {
    /// What was wrong, in the worker's words (never the reply's own text).
    public var reason: String

    public var description: String { "the render helper's reply was refused: \(reason)" }
}

/// What one job's replies must be, checked whole before the worker reads a field of them: a helper may have been
/// taken over by the photo it decodes, so each number in a reply is an attacker's until checked against what the
/// worker asked for and what it knows (the source's length, the limits, the memory budget, the result file's real
/// size, the time it waited). The checks are the reply's whole contract; anything they let through is safe to use.
struct ReplyCheck {
    let nonce: UInt64
    let sourceLength: Int
    let options: RenderOptions
    let limits: ImageLimits
    /// The largest memory estimate the worker would act on (its budget); nil: no bound but `Int.max / 4`.
    let maxEstimate: Int?
    /// The result file's fixed size (`MemoryFile.sealedResult`).
    let resultCapacity: Int

    /// The longest a BlurHash can be: 9 × 9 components.
    static let maxBlurHashLength = 4 + 2 * 81
    /// The longest failure detail passed on (it goes into the job's error message).
    static let maxDetailLength = 500

    /// The renditions a render must return, in order (`RenderOptions.renditionSizes`).
    var expectedRenditions: [(size: Int, format: AvatarFormat)] {
        options.renditionSizes.flatMap { size, formats in formats.map { (size, $0) } }
    }

    /// Bytes the result file holds: every rendition encoded at its worst (PNG of raw RGBA rows, with its chunks and
    /// an ICC profile; the other formats write less) with room to spare. The helper cannot grow the file past it
    /// (sealed).
    static func resultCapacity(for options: RenderOptions) -> Int {
        options.renditionSizes.reduce(0) { total, rendition in
            let side = min(max(rendition.size, 1), 1 << 14)
            return total + rendition.formats.count * (side * (side * 8 + 1) + (1 << 20))
        }
    }

    // MARK: - The replies

    /// The failure a `failed` reply reports, as the render's own error; nil for any other reply.
    func failure(_ reply: HelperReply) throws(RefusedReply) -> ImagingError? {
        guard case .failed(_, let failure) = reply else { return nil }
        try nonceMatches(reply)
        let code = ImagingError.Code(rawValue: failure.code)
        guard Self.knownCodes.contains(code) else { throw refused("an unknown error code") }
        let detail = String(failure.detail.unicodeScalars.prefix(Self.maxDetailLength).filter { $0.isASCII })
        return ImagingError(code, detail: detail)
    }

    /// The codes a helper's render may fail with.
    static let knownCodes: Set<ImagingError.Code> = [
        .decodeFailed, .unsupportedFormat, .tooLarge, .tooManyPixels, .tooManyScans, .tooSmall, .processingFailed,
        .outOfMemory, .aspectMismatch, .invalidRequest,
    ]

    func probed(_ reply: HelperReply) throws(RefusedReply) -> ProbeResult {
        guard case .probed(_, let probed) = reply else { throw refused("a \(Self.kind(reply)) reply to a probe") }
        try nonceMatches(reply)
        try header(probed.header)
        let most = maxEstimate ?? Int.max / 4
        for bytes in [probed.estimate.fullResolution, probed.estimate.fallback] where !(0...most).contains(bytes) {
            throw refused("a memory estimate outside 0…\(most)")
        }
        return probed
    }

    /// The render's result, its renditions read from `result` once every placement was checked against the file's
    /// real size. `probed` is the header the probe reported; `elapsed`, how long the worker has waited on this job.
    func rendered(
        _ reply: HelperReply, probed: ImageHeader, result: MemoryFile, elapsed: Duration
    ) throws(RefusedReply) -> RenderResult {
        guard case .rendered(_, let image) = reply else { throw refused("a \(Self.kind(reply)) reply to a render") }
        try nonceMatches(reply)
        guard image.header == probed else { throw refused("a header unlike the probe's") }
        try renditions(image.renditions, in: result)
        try plan(image.plan, header: image.header)
        let oriented = image.header.orientedSize
        guard (1...oriented.width).contains(image.decodeSize.width),
            (1...oriented.height).contains(image.decodeSize.height)
        else { throw refused("a decode size outside the image") }
        guard (1...256).contains(image.shrinkFactor) else { throw refused("a shrink factor outside 1…256") }
        if let hash = image.blurHash { try blurHash(hash) } else if options.blurHash { throw refused("no BlurHash") }
        let timings = image.timings
        let stages = [timings.probe, timings.render, timings.encode, timings.total]
        for duration in stages + timings.encodeByFormat.values + timings.encodeCPUByFormat.values {
            try withinWait(duration, elapsed)
        }
        if let report = image.faces { try faceReport(report, header: image.header, elapsed: elapsed) }
        do {
            return try image.result(reading: result)
        } catch {
            throw refused("its renditions could not be read: \(error)")
        }
    }

    // MARK: - The parts

    private func nonceMatches(_ reply: HelperReply) throws(RefusedReply) {
        guard reply.nonce == nonce else { throw refused("another job's nonce") }
    }

    private func header(_ header: ImageHeader) throws(RefusedReply) {
        for size in [header.storedSize, header.orientedSize] {
            guard size.width > 0, size.height > 0 else { throw refused("an empty image") }
            let (pixels, overflow) = size.width.multipliedReportingOverflow(by: size.height)
            guard !overflow, pixels <= limits.maxPixels else { throw refused("more pixels than the limit") }
        }
        let stored = header.storedSize
        guard
            header.orientedSize == stored
                || header.orientedSize == PixelSize(width: stored.height, height: stored.width)
        else { throw refused("an oriented size unlike the stored one") }
        guard (1...8).contains(header.orientation), (1...5).contains(header.bands), (1...32).contains(header.bitDepth)
        else { throw refused("an orientation, band count or bit depth out of range") }
        guard header.byteCount == sourceLength else { throw refused("a byte count unlike the source's") }
        guard header.interpretation.utf8.count <= 32 else { throw refused("a long interpretation") }
    }

    private func renditions(_ placed: [RenderedImage.Placed], in file: MemoryFile) throws(RefusedReply) {
        let expected = expectedRenditions
        guard placed.count == expected.count,
            zip(placed, expected).allSatisfy({ $0.size == $1.size && $0.format == $1.format })
        else { throw refused("renditions other than those requested") }
        let size: Int
        do {
            size = try file.size()
        } catch {
            throw refused("its result file: \(error)")
        }
        guard size == resultCapacity else { throw refused("a result file of another size") }
        for rendition in placed {
            let (end, overflow) = rendition.offset.addingReportingOverflow(rendition.length)
            guard rendition.offset >= 0, rendition.length > 0, !overflow, end <= size else {
                throw refused("a rendition outside the result file")
            }
        }
    }

    private func plan(_ plan: CropPlan, header: ImageHeader) throws(RefusedReply) {
        let source = header.orientedSize
        guard plan.source == source else { throw refused("a plan for another size") }
        let numbers = [plan.sMin, plan.sQuality, plan.sMax, plan.scaleApplied, plan.density, plan.scaleRequested ?? 1]
        guard !numbers.contains(where: \.isNaN), plan.crop.x.isFinite, plan.crop.y.isFinite, plan.crop.side.isFinite
        else { throw refused("a plan with numbers that are not") }
        let crop = plan.pixelCrop
        guard crop.side > 0, crop.x >= 0, crop.y >= 0, crop.side <= source.width - crop.x,
            crop.side <= source.height - crop.y
        else { throw refused("a crop outside the image") }
    }

    private func blurHash(_ hash: String) throws(RefusedReply) {
        let characters = Array(hash.utf8)
        guard options.blurHash, (6...Self.maxBlurHashLength).contains(characters.count),
            characters.allSatisfy(Self.blurHashAlphabet.contains),
            let sizeFlag = Self.blurHashDigits.firstIndex(of: characters[0])
        else { throw refused("a BlurHash that is not one") }
        let components = (x: sizeFlag % 9 + 1, y: sizeFlag / 9 + 1)
        guard characters.count == 4 + 2 * components.x * components.y else { throw refused("a BlurHash's length") }
    }

    private static let blurHashDigits = Array(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~".utf8)
    private static let blurHashAlphabet = Set(blurHashDigits)

    private func faceReport(_ report: FaceReport, header: ImageHeader, elapsed: Duration) throws(RefusedReply) {
        let width = Double(header.orientedSize.width)
        let height = Double(header.orientedSize.height)
        guard report.faces.count <= 1_000, report.kept.allSatisfy({ report.faces.indices.contains($0) }) else {
            throw refused("a face report with too many faces or kept faces it does not have")
        }
        func inside(_ x: Double, _ y: Double) -> Bool {
            x.isFinite && y.isFinite && (0...width).contains(x) && (0...height).contains(y)
        }
        for face in report.faces {
            guard inside(face.x, face.y), face.width.isFinite, face.height.isFinite, face.width >= 0,
                face.height >= 0, face.x + face.width <= width + 1, face.y + face.height <= height + 1,
                face.score.isFinite, (0...1).contains(face.score),
                [face.rightEye, face.leftEye].allSatisfy({ $0.map { inside($0.x, $0.y) } ?? true })
            else { throw refused("a face outside the image") }
        }
        let detection = report.detectionSize
        guard detection.width >= 0, detection.height >= 0, detection.width <= 1 << 16, detection.height <= 1 << 16
        else { throw refused("a face detection size out of range") }
        try withinWait(report.time, elapsed)
        try withinWait(report.detectorTime, elapsed)
    }

    /// A duration the helper measured lies between zero and what the worker waited for it.
    private func withinWait(_ duration: Duration, _ elapsed: Duration) throws(RefusedReply) {
        guard duration >= .zero, duration <= elapsed + .seconds(1) else { throw refused("a time longer than the job") }
    }

    private func refused(_ reason: String) -> RefusedReply { RefusedReply(reason: reason) }

    private static func kind(_ reply: HelperReply) -> String {
        switch reply {
        case .ready: "ready"
        case .probed: "probed"
        case .rendered: "rendered"
        case .failed: "failed"
        }
    }
}
