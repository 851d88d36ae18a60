/// Percent-encoding as SigV4 (and S3) define it: every byte of the UTF-8 form except the unreserved
/// characters `A-Z a-z 0-9 - _ . ~` becomes `%XX` with upper-case hex. Used for the canonical request, the
/// request URL (so the two always agree) and public URLs.
enum URIEncoding {
    /// Encodes one path segment or query component (`/` is encoded too).
    static func encode(_ text: String) -> String {
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Encodes a `/`-separated key segment by segment, keeping the slashes. Every byte but `/` goes
    /// through `encode`, so the slashes kept are exactly the `/` bytes of the key, the separators
    /// `ObjectKey` validated (a split on Characters would hide one after U+0600).
    static func encodePath(_ key: String) -> String {
        ObjectKey.segments(of: key).map { encode(String(Substring($0))) }.joined(separator: "/")
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)
}

/// Joins a base URL and a key for `publicURL(for:)`.
func joinPublicURL(base: String?, key: String) -> String? {
    guard let base, !base.isEmpty, ObjectKey.isValid(key) else { return nil }
    var trimmed = Substring(base)
    while trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
    return trimmed + "/" + URIEncoding.encodePath(key)
}
