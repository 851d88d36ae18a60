import Crypto
import Foundation

/// AWS Signature Version 4, header form ("Authorization: AWS4-HMAC-SHA256 ...").
///
/// The signer is pure: it takes a request already in canonical pieces (an encoded path, raw query pairs,
/// headers including `host` and `x-amz-date`) and a payload hash, and returns the signature with every
/// intermediate step, so tests can check each one against AWS's published examples.
struct SigV4Signer: Sendable {
    struct Request {
        var method: String
        /// The URI path exactly as sent, already percent-encoded (`URIEncoding.encodePath`), starting with `/`.
        var canonicalURI: String
        /// Raw (not encoded) query parameters; a parameter without a value has value "".
        var query: [(name: String, value: String)] = []
        /// Headers to sign; must include `host` and `x-amz-date`. Names are case-insensitive.
        var headers: [(name: String, value: String)]
    }

    struct Signature {
        var canonicalRequest: String
        var stringToSign: String
        var signedHeaders: String
        var signature: String
        var authorization: String
    }

    static let algorithm = "AWS4-HMAC-SHA256"
    static let emptyPayloadHash = Hex.sha256([UInt8]())

    var accessKeyID: String
    var secretAccessKey: String
    var region: String
    var service: String = "s3"

    /// Signs `request`; `amzDate` is the `x-amz-date` value (`yyyyMMdd'T'HHmmss'Z'`).
    func sign(_ request: Request, payloadHash: String, amzDate: String) -> Signature {
        let (canonicalHeaders, signedHeaders) = Self.canonicalHeaders(request.headers)
        let canonicalRequest = [
            request.method,
            request.canonicalURI,
            Self.canonicalQuery(request.query),
            canonicalHeaders,
            signedHeaders,
            payloadHash,
        ].joined(separator: "\n")

        let date = String(amzDate.prefix(8))
        let scope = "\(date)/\(region)/\(service)/aws4_request"
        let stringToSign = [
            Self.algorithm, amzDate, scope, Hex.sha256(Array(canonicalRequest.utf8)),
        ].joined(separator: "\n")

        let key = signingKey(date: date)
        let signature = Hex.encode(
            HMAC<SHA256>.authenticationCode(for: Array(stringToSign.utf8), using: key))
        let authorization =
            "\(Self.algorithm) Credential=\(accessKeyID)/\(scope), "
            + "SignedHeaders=\(signedHeaders), Signature=\(signature)"
        return Signature(
            canonicalRequest: canonicalRequest, stringToSign: stringToSign, signedHeaders: signedHeaders,
            signature: signature, authorization: authorization)
    }

    /// kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request").
    func signingKey(date: String) -> SymmetricKey {
        var key = SymmetricKey(data: Array(("AWS4" + secretAccessKey).utf8))
        for part in [date, region, service, "aws4_request"] {
            key = SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Array(part.utf8), using: key))
        }
        return key
    }

    /// Query parameters URI-encoded (names and values), sorted by name then value, joined with `&`.
    static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        let encoded: [(name: String, value: String)] = query.map {
            (URIEncoding.encode($0.name), URIEncoding.encode($0.value))
        }
        let sorted = encoded.sorted { left, right in
            left.name == right.name ? left.value < right.value : left.name < right.name
        }
        return sorted.map { pair in pair.name + "=" + pair.value }.joined(separator: "&")
    }

    /// Lower-cased names, sorted; values trimmed with inner runs of spaces collapsed; repeated headers joined
    /// with commas. Returns the canonical header block (each line ending in a newline) and the signed list.
    static func canonicalHeaders(_ headers: [(name: String, value: String)]) -> (String, String) {
        var merged: [String: [String]] = [:]
        for (name, value) in headers {
            merged[name.lowercased(), default: []].append(normalizeHeaderValue(value))
        }
        let names = merged.keys.sorted()
        let block = names.map { "\($0):\(merged[$0, default: []].joined(separator: ","))\n" }.joined()
        return (block, names.joined(separator: ";"))
    }

    private static func normalizeHeaderValue(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }

    /// `x-amz-date` for `date`: `yyyyMMdd'T'HHmmss'Z'` in UTC.
    static func amzDate(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d%02d%02dT%02d%02d%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }
}
