/// An opaque 8-bit sRGB colour: the background that transparent pixels are flattened
/// onto (the mask is only the app's; the published avatar is square and opaque). Kept
/// here, beside the editor's other values, so the wire protocol and the renderer share it.
public struct RGBColor: Sendable, Hashable, Codable, CustomStringConvertible {
    public var r: UInt8
    public var g: UInt8
    public var b: UInt8

    public init(r: UInt8, g: UInt8, b: UInt8) {
        self.r = r
        self.g = g
        self.b = b
    }

    public static let white = RGBColor(r: 255, g: 255, b: 255)

    /// Parses "#RRGGBB" (hex digits in any case); `nil` for anything else.
    public init?(hex: String) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 7, utf8[0] == UInt8(ascii: "#") else { return nil }
        var channels: [UInt8] = []
        for index in stride(from: 1, to: 7, by: 2) {
            guard let high = Self.hexValue(utf8[index]), let low = Self.hexValue(utf8[index + 1]) else { return nil }
            channels.append(high << 4 | low)
        }
        self.init(r: channels[0], g: channels[1], b: channels[2])
    }

    /// "#RRGGBB", upper-case.
    public var hex: String {
        let digits = Array("0123456789ABCDEF")
        var text = "#"
        for channel in [r, g, b] {
            text.append(digits[Int(channel >> 4)])
            text.append(digits[Int(channel & 0xF)])
        }
        return text
    }

    public var description: String { hex }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
