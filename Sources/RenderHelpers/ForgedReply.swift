import Foundation
import Imaging

#if AVATAR_TEST_SEAMS
    /// TEST-ONLY (debug builds, `RenderTestSeams`): the hostile helper. A source whose bytes contain
    /// `AVATAR-TEST-FORGE=<name>` makes the helper answer its job with the forged reply named, in place of the real
    /// one — what a helper taken over by its upload could send (docs/SECURITY.md, "Replies are untrusted"). The
    /// worker must refuse each (`ReplyCheck`), fail only that job and go on.
    public enum ForgedReply: String, Sendable, CaseIterable {
        /// A render with no rendition (the worker once trapped reading `renditions[0]`).
        case noRenditions = "no-renditions"
        /// A rendition of 2^62 bytes (the worker once allocated before it checked).
        case hugeRendition = "huge-rendition"
        /// A rendition placed past the result file's end.
        case renditionPastEnd = "rendition-past-end"
        /// A memory estimate of `Int.max` (the budget's arithmetic once trapped).
        case maxEstimate = "max-estimate"
        case negativeEstimate = "negative-estimate"
        /// An encode of 10^12 s (the stage arithmetic once trapped).
        case endlessEncode = "endless-encode"
        /// A plan of NaNs and a BlurHash of 60,000 characters.
        case nanPlan = "nan-plan"
        /// Another job's nonce.
        case wrongNonce = "wrong-nonce"
        /// Bytes that are no message.
        case garbage = "garbage"
        /// A failure with a code the worker does not know and a detail of 50,000 characters.
        case unknownFailure = "unknown-failure"
        /// A face outside the image.
        case faceOutside = "face-outside"

        static let marker = Array("AVATAR-TEST-FORGE=".utf8)

        /// The forgery a source asks for.
        init?(source: [UInt8]) {
            guard let end = RenderTestSeams.find(Self.marker, in: source) else { return nil }
            let name = source[end...].prefix {
                $0 == UInt8(ascii: "-") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
            }
            self.init(rawValue: String(decoding: name, as: UTF8.self))
        }

        /// The bytes sent instead of `reply`, or nil to send it as it is (a forgery for the other step).
        func bytes(for reply: HelperReply) throws -> [UInt8]? {
            switch (self, reply) {
            case (.garbage, _):
                return Array("{\"rendered\": [[[[".utf8) + [0xFF, 0x00, 0xFE]
            case (.wrongNonce, .probed(let nonce, let probed)):
                return try HelperCoding.encode(HelperReply.probed(nonce: nonce &+ 1, probed))
            case (.maxEstimate, .probed(let nonce, var probed)):
                probed.estimate = MemoryEstimate(fullResolution: Int.max, fallback: Int.max)
                return try HelperCoding.encode(HelperReply.probed(nonce: nonce, probed))
            case (.negativeEstimate, .probed(let nonce, var probed)):
                probed.estimate = MemoryEstimate(fullResolution: -1, fallback: Int.min)
                return try HelperCoding.encode(HelperReply.probed(nonce: nonce, probed))
            case (.unknownFailure, .probed(let nonce, _)):
                let failure = HelperFailure(
                    ImagingError(.init(rawValue: "pwned"), detail: String(repeating: "x", count: 50_000)))
                return try HelperCoding.encode(HelperReply.failed(nonce: nonce, failure))
            case (_, .rendered(let nonce, var image)):
                switch self {
                case .noRenditions: image.renditions = []
                case .hugeRendition: image.renditions[0].length = 1 << 62
                case .renditionPastEnd: image.renditions[0].offset = Int.max - 10
                case .endlessEncode: image.timings.encode = .seconds(1_000_000_000_000)
                case .nanPlan:
                    image.plan.sMin = .nan
                    image.plan.crop.x = .nan
                    image.blurHash = String(repeating: "A", count: 60_000)
                case .faceOutside:
                    image.faces = FaceReport(
                        faces: [.init(x: -1e300, y: 1e300, width: .infinity, height: 1, score: 2)], kept: [7],
                        ruleUsed: true, largestOnly: false, detectionSize: .init(width: 1, height: 1), time: .zero,
                        error: nil)
                default: return nil
                }
                return try HelperCoding.encode(HelperReply.rendered(nonce: nonce, image))
            default:
                return nil
            }
        }
    }

    extension RenderTestSeams {
        /// The forgery `source` asks for (`ForgedReply`).
        func forgery(in source: [UInt8]) -> ForgedReply? { ForgedReply(source: source) }
    }
#else
    /// A release build forges nothing.
    public enum ForgedReply: Sendable {
        func bytes(for reply: HelperReply) throws -> [UInt8]? { switch self {} }
    }

    extension RenderTestSeams {
        func forgery(in source: [UInt8]) -> ForgedReply? { switch self {} }
    }
#endif
