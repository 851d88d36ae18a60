import Messaging

/// A W3C Trace Context `traceparent` value (https://www.w3.org/TR/trace-context/#traceparent-header):
/// `00-<trace id, 32 hex>-<parent id, 16 hex>-<flags, 2 hex>`, carried as a Kafka header of that name, so a
/// request's trace can continue in the worker and in whoever consumes its result.
public struct TraceParent: Sendable, Hashable, CustomStringConvertible {
    /// The header names, as W3C Trace Context names them for HTTP (and OpenTelemetry's Kafka propagation).
    public static let headerName = "traceparent"
    public static let stateHeaderName = "tracestate"

    /// 16 bytes, not all zero.
    public let traceID: [UInt8]
    /// The span that is the parent of the receiver's work: 8 bytes, not all zero.
    public let parentID: [UInt8]
    /// Bit 0: sampled.
    public let flags: UInt8

    public var isSampled: Bool { flags & 1 == 1 }

    public init?(traceID: [UInt8], parentID: [UInt8], flags: UInt8) {
        guard traceID.count == 16, parentID.count == 8, traceID.contains(where: { $0 != 0 }),
            parentID.contains(where: { $0 != 0 })
        else { return nil }
        self.traceID = traceID
        self.parentID = parentID
        self.flags = flags
    }

    /// Parses a header value; nil when it is not a valid `traceparent` (then the receiver starts a new trace, as
    /// the specification asks). A version above 00 is read as 00 when its first four fields are well formed.
    public init?(header: String) {
        let bytes = Array(header.utf8)
        guard bytes.count >= 55, bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"),
            bytes[52] == UInt8(ascii: "-"),
            let version = Self.hex(bytes[0..<2]), version.count == 1, version[0] != 0xff,
            let traceID = Self.hex(bytes[3..<35]), let parentID = Self.hex(bytes[36..<52]),
            let flags = Self.hex(bytes[53..<55])
        else { return nil }
        // Version 00 is exactly 55 characters; later versions may append fields after a dash.
        if version[0] == 0 ? bytes.count != 55 : bytes.count > 55 && bytes[55] != UInt8(ascii: "-") { return nil }
        self.init(traceID: traceID, parentID: parentID, flags: flags[0])
    }

    /// A new trace: random ids (`SystemRandomNumberGenerator`), sampled unless told otherwise.
    public static func random(sampled: Bool = true) -> TraceParent {
        var generator = SystemRandomNumberGenerator()
        while true {
            let traceID = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let parentID = (0..<8).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if let value = TraceParent(traceID: traceID, parentID: parentID, flags: sampled ? 1 : 0) { return value }
        }
    }

    /// The header value, version 00, lower-case hex.
    public var header: String {
        "00-" + Self.hexString(traceID) + "-" + Self.hexString(parentID) + "-" + Self.hexString([flags])
    }

    public var description: String { header }

    /// The trace id as lower-case hex (a log line's `trace_id`).
    public var traceIDHex: String { Self.hexString(traceID) }

    /// The parent span's id as lower-case hex (a log line's `span_id`).
    public var parentIDHex: String { Self.hexString(parentID) }

    /// The valid `traceparent` among `headers`, if any.
    public init?(headers: [KafkaHeader]) {
        guard let text = headers.string(of: Self.headerName) else { return nil }
        self.init(header: text)
    }

    /// Lower-case hex only, as the specification requires.
    private static func hex(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count / 2)
        var high: UInt8?
        for character in text {
            let nibble: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = character - UInt8(ascii: "a") + 10
            default: return nil
            }
            if let value = high {
                bytes.append(value << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return bytes
    }

    private static func hexString(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xf)]] })
    }
}
