import Crypto
import Foundation

/// Lower-case hex.
public enum Hex {
    public static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var out = [UInt8]()
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Lower-case hex SHA-256, as SigV4 wants it.
    static func sha256<Bytes: DataProtocol>(_ bytes: Bytes) -> String {
        encode(SHA256.hash(data: bytes))
    }

    private static let digits = Array("0123456789abcdef".utf8)
}
