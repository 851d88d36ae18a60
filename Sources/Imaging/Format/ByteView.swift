/// Bounds-checked big- and little-endian reads from untrusted bytes: every read past the end
/// returns nil instead of trapping, so a parser of hostile input can only fail, never crash.
struct ByteView {
    let bytes: UnsafeRawBufferPointer

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    var count: Int { bytes.count }

    func u8(_ offset: Int) -> UInt8? {
        guard offset >= 0, offset < bytes.count else { return nil }
        return bytes[offset]
    }

    func u16be(_ offset: Int) -> Int? {
        guard let a = u8(offset), let b = u8(offset + 1) else { return nil }
        return Int(a) << 8 | Int(b)
    }

    func u16le(_ offset: Int) -> Int? {
        guard let a = u8(offset), let b = u8(offset + 1) else { return nil }
        return Int(b) << 8 | Int(a)
    }

    func u24le(_ offset: Int) -> Int? {
        guard let low = u16le(offset), let high = u8(offset + 2) else { return nil }
        return Int(high) << 16 | low
    }

    func u32be(_ offset: Int) -> Int? {
        guard let high = u16be(offset), let low = u16be(offset + 2) else { return nil }
        return high << 16 | low
    }

    func u32le(_ offset: Int) -> Int? {
        guard let low = u16le(offset), let high = u16le(offset + 2) else { return nil }
        return high << 16 | low
    }

    /// A 64-bit big-endian value, nil if it does not fit in an `Int` (no real box is that large).
    func u64be(_ offset: Int) -> Int? {
        guard let high = u32be(offset), let low = u32be(offset + 4), high < 1 << 31 else { return nil }
        return high << 32 | low
    }

    /// Whether the bytes at `offset` are exactly `expected`.
    func matches(_ expected: [UInt8], at offset: Int) -> Bool {
        guard offset >= 0, offset <= bytes.count - expected.count else { return false }
        for (index, byte) in expected.enumerated() where bytes[offset + index] != byte {
            return false
        }
        return true
    }

    /// Four bytes as a four-character code ("ftyp"), nil past the end.
    func fourCC(_ offset: Int) -> FourCC? {
        guard let value = u32be(offset) else { return nil }
        return FourCC(rawValue: UInt32(value))
    }
}

/// A four-character code as ISOBMFF and RIFF use them ("ftyp", "ispe", "avif").
struct FourCC: Hashable, Sendable, CustomStringConvertible {
    let rawValue: UInt32

    init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// `text` must be four ASCII characters.
    init(_ text: StaticString) {
        precondition(text.utf8CodeUnitCount == 4, "a four-character code has four characters")
        var value: UInt32 = 0
        text.withUTF8Buffer { buffer in
            for byte in buffer { value = value << 8 | UInt32(byte) }
        }
        rawValue = value
    }

    var description: String {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (24 - 8 * UInt32($0))) }
        return String(decoding: bytes.map { (0x20..<0x7F).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }
}
