import Foundation

/// A bind parameter. Values reach the server only as parameters of `PQexecParams`, never inside SQL text.
///
/// Each case is sent in text format with an explicit type: `text` (25), `int` → `bigint` (20), `double` →
/// `double precision` (701), `bool` (16), `bytes` → `bytea` (17), `uuid` (2950), `timestamp` → `timestamptz`
/// (1184, microsecond precision). `null` leaves the type to the server. Where the server needs another type,
/// cast in SQL: `pg_terminate_backend($1::int4)`.
public enum PostgresValue: Sendable, Hashable {
    case text(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case bytes([UInt8])
    case uuid(UUID)
    case timestamp(Date)
    case null
}

/// Type OIDs used for parameters and for decoding (pg_type.h).
enum PostgresOID {
    static let unspecified: UInt32 = 0
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let int8: UInt32 = 20
    static let int2: UInt32 = 21
    static let int4: UInt32 = 23
    static let text: UInt32 = 25
    static let oid: UInt32 = 26
    static let float4: UInt32 = 700
    static let float8: UInt32 = 701
    static let date: UInt32 = 1082
    static let timestamp: UInt32 = 1114
    static let timestamptz: UInt32 = 1184
    static let numeric: UInt32 = 1700
    static let uuid: UInt32 = 2950
}

/// A parameter in the form libpq takes it: a type OID and the text representation (`nil` for SQL NULL).
struct EncodedParameter: Equatable {
    var oid: UInt32
    var text: String?
}

extension PostgresValue {
    /// The text-format encoding. Throws `invalidParameter` for strings Postgres cannot store (NUL characters).
    func encoded() throws(DatabaseError) -> EncodedParameter {
        switch self {
        case .text(let string):
            if string.utf8.contains(0) {
                throw DatabaseError(code: .invalidParameter, message: "text parameter contains a NUL character")
            }
            return EncodedParameter(oid: PostgresOID.text, text: string)
        case .int(let value):
            return EncodedParameter(oid: PostgresOID.int8, text: String(value))
        case .double(let value):
            return EncodedParameter(oid: PostgresOID.float8, text: Self.encode(double: value))
        case .bool(let value):
            return EncodedParameter(oid: PostgresOID.bool, text: value ? "true" : "false")
        case .bytes(let bytes):
            return EncodedParameter(oid: PostgresOID.bytea, text: Self.encodeHex(bytes))
        case .uuid(let uuid):
            return EncodedParameter(oid: PostgresOID.uuid, text: uuid.uuidString.lowercased())
        case .timestamp(let date):
            return EncodedParameter(oid: PostgresOID.timestamptz, text: PostgresTimestamp.format(date))
        case .null:
            return EncodedParameter(oid: PostgresOID.unspecified, text: nil)
        }
    }

    static func encode(double value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        // Swift prints the shortest representation that reads back to the same Double; float8in parses it exactly.
        return "\(value)"
    }

    /// bytea hex format: `\x` followed by two lowercase hex digits per byte.
    static func encodeHex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        out.reserveCapacity(2 + bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
