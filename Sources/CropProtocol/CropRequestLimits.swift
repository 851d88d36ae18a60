import Foundation

/// The bounds `ValidatedCropRequest` enforces on a request (documented per field in
/// proto/avatar/crop/v1/crop_request.proto).
public enum CropRequestLimits {
    /// Characters allowed in a job id: `[A-Za-z0-9._:-]`.
    public static let jobIDLength = 1...128
    /// Largest source key in UTF-8 bytes.
    public static let maxSourceKeyBytes = 1024
    /// Side of the avatar and of each extra rendition, in pixels.
    public static let outputSizes = 16...4096
    /// Side used when a request names none.
    public static let defaultOutputSize = 512
    /// JPEG quality.
    public static let qualities = 1...100
    /// Quality used when a request names none.
    public static let defaultQuality = 90
    /// Distinct extra renditions.
    public static let maxExtraSizes = 4
    /// Reference image side, in pixels.
    public static let referenceSides = 1...100_000
    /// Device screen scale σ.
    public static let screenScales = 0.5...10.0
    /// Mask diameter in points.
    public static let maskDiameters = 1.0...10_000.0

    /// True for 1–128 characters of `[A-Za-z0-9._:-]`.
    public static func isValidJobID(_ id: String) -> Bool {
        let utf8 = id.utf8
        guard jobIDLength.contains(utf8.count) else { return false }
        return utf8.allSatisfy { c in
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: ":"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }

    /// The UUID in canonical 8-4-4-4-12 hex form (any case); `nil` for anything else,
    /// including the nil UUID.
    public static func parseUserID(_ text: String) -> UUID? {
        let utf8 = Array(text.utf8)
        guard utf8.count == 36 else { return nil }
        for (index, c) in utf8.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard c == UInt8(ascii: "-") else { return nil }
            } else {
                let isHex =
                    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(c)
                    || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(c)
                guard isHex else { return nil }
            }
        }
        guard let uuid = UUID(uuidString: text), uuid.uuidString != "00000000-0000-0000-0000-000000000000" else {
            return nil
        }
        return uuid
    }

    /// True for a relative object key: 1–1024 bytes, no leading "/", no empty, "." or ".."
    /// segments, no backslash and no control characters. Segments are split on the `/` byte, as
    /// storage splits them (a Character split lets U+0600 hide a `..`: docs/ARCHITECTURE.md §7).
    public static func isValidSourceKey(_ key: String) -> Bool {
        guard !key.isEmpty, key.utf8.count <= maxSourceKeyBytes else { return false }
        for scalar in key.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\\" { return false }
            if (0x80...0x9F).contains(scalar.value) { return false }
        }
        let segments = key.utf8[...].split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        return segments.allSatisfy { segment in
            !segment.isEmpty && !(segment.count <= 2 && segment.allSatisfy { $0 == UInt8(ascii: ".") })
        }
    }
}
