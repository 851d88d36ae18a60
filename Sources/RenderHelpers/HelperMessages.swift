import CropGeometry
import Foundation
import Imaging
import Sandbox

/// What the worker and a render helper say to each other (docs/ARCHITECTURE.md §3, "Render helpers"): one JSON
/// message per `SOCK_SEQPACKET` record, the bytes beside it in memory files.
///
/// A helper says `ready` once, when it has warmed up and locked itself down, then serves one job — two exchanges —
/// and is replaced. `probe` (with the sealed source photo's and the fixed-size result's memory files attached) →
/// `probed` (the header and the memory estimate) or `failed`; the worker then reserves memory and caps the helper's
/// address space, and sends `render` → `rendered` (the renditions written into the result file) or `failed`.
///
/// Every reply is untrusted input (docs/SECURITY.md): it carries the job's nonce, and `ReplyCheck` validates it whole
/// before the worker uses a field of it.
enum HelperRequest: Codable {
    case probe(ProbeJob)
    case render(nonce: UInt64, fallback: Bool)
}

/// The validated request's render part: what `AvatarRenderer.probe` and `render` take.
struct ProbeJob: Codable {
    /// Echoed by every reply of this job.
    var nonce: UInt64
    var sourceLength: Int
    var input: CropInput
    var options: RenderOptions
    var limits: ImageLimits
    /// TEST-ONLY: the seams the job runs with (`RenderTestSeams`), nil in production.
    var seams: RenderTestSeams?
}

enum HelperReply: Codable {
    /// The layers its lockdown put on (`ProcessLockdown.Layers`).
    case ready(ProcessLockdown.Layers)
    case probed(nonce: UInt64, ProbeResult)
    case rendered(nonce: UInt64, RenderedImage)
    case failed(nonce: UInt64, HelperFailure)

    var nonce: UInt64? {
        switch self {
        case .ready: nil
        case .probed(let nonce, _), .rendered(let nonce, _), .failed(let nonce, _): nonce
        }
    }
}

/// A render's `ImagingError` as it crosses the channel.
struct HelperFailure: Codable, Equatable {
    var code: String
    var detail: String

    init(_ error: ImagingError) {
        code = error.code.rawValue
        detail = error.detail
    }
}

/// A `RenderResult` without its bytes: each rendition's place in the result file instead.
struct RenderedImage: Codable {
    struct Placed: Codable, Equatable {
        var size: Int
        var format: AvatarFormat
        var offset: Int
        var length: Int
    }

    var header: ImageHeader
    var plan: CropPlan
    var decodeSize: PixelSize
    var shrinkFactor: Int
    var fallbackUsed: Bool
    var decoder: DecoderPath
    var blurHash: String?
    var timings: RenderTimings
    var faces: FaceReport?
    /// The avatar, then every other rendition (`RenderResult.extras`), in `RenderOptions.renditionSizes`' order.
    var renditions: [Placed]

    /// `result`'s description, and its renditions' bytes in the order they go into the result file.
    init(_ result: RenderResult) {
        header = result.header
        plan = result.plan
        decodeSize = result.decodeSize
        shrinkFactor = result.shrinkFactor
        fallbackUsed = result.fallbackUsed
        decoder = result.decoder
        blurHash = result.blurHash
        timings = result.timings
        faces = result.faces
        var offset = 0
        renditions = ([result.avatar] + result.extras).map { rendition in
            defer { offset += rendition.data.count }
            return Placed(size: rendition.size, format: rendition.format, offset: offset, length: rendition.data.count)
        }
    }

    /// The result again, its renditions read from `file`. Only after `ReplyCheck.rendered` accepted it: every
    /// placement lies inside the file, and there is an avatar.
    func result(reading file: MemoryFile) throws(HelperSystemError) -> RenderResult {
        var renditions: [Rendition] = []
        for placed in self.renditions {
            renditions.append(
                Rendition(
                    size: placed.size, format: placed.format,
                    data: try file.read(offset: placed.offset, length: placed.length)))
        }
        return RenderResult(
            header: header, plan: plan, decodeSize: decodeSize, shrinkFactor: shrinkFactor, fallbackUsed: fallbackUsed,
            avatar: renditions[0], extras: Array(renditions.dropFirst()), blurHash: blurHash, timings: timings,
            decoder: decoder, faces: faces)
    }
}

/// The channel's JSON (non-finite numbers as strings: a plan's ratios may be infinite). Keys are sorted, so one
/// message is always the same bytes (Foundation's order otherwise follows a per-process hash seed).
enum HelperCoding {
    static func encode<Value: Encodable>(_ value: Value) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return Array(try encoder.encode(value))
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8]) throws -> Value {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return try decoder.decode(type, from: Data(bytes))
    }
}
