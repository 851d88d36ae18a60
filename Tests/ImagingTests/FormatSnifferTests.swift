import Foundation
import Testing

@testable import Imaging

@Suite("Format by bytes")
struct FormatSnifferTests {
    static func heif(brand: String, compatible: [String] = [], boxes: [UInt8] = []) -> [UInt8] {
        let payload = Array(brand.utf8) + [0, 0, 0, 0] + compatible.flatMap { Array($0.utf8) }
        return box("ftyp", payload) + boxes
    }

    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        be32(UInt32(8 + payload.count)) + Array(type.utf8) + payload
    }

    static func be32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }

    static func ispe(_ width: UInt32, _ height: UInt32) -> [UInt8] {
        box("ispe", [0, 0, 0, 0] + be32(width) + be32(height))
    }

    @Test("the accepted formats by their magic numbers")
    func accepted() {
        #expect(FormatSniffer.format(of: [0xFF, 0xD8, 0xFF, 0xE0, 0, 0]) == .jpeg)
        #expect(FormatSniffer.format(of: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0]) == .png)
        #expect(FormatSniffer.format(of: Array("GIF89a....".utf8)) == .gif)
        #expect(FormatSniffer.format(of: Array("GIF87a....".utf8)) == .gif)
        #expect(FormatSniffer.format(of: Array("RIFF\u{10}\0\0\0WEBPVP8 ".utf8)) == .webp)
        #expect(FormatSniffer.format(of: [0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0]) == .tiff)
        #expect(FormatSniffer.format(of: [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8]) == .tiff)
        #expect(FormatSniffer.format(of: Self.heif(brand: "heic", compatible: ["mif1", "heic"])) == .heif)
        #expect(FormatSniffer.format(of: Self.heif(brand: "avif", compatible: ["avif", "mif1"])) == .heif)
        // A brand libheif reads, listed only among the compatible ones.
        #expect(FormatSniffer.format(of: Self.heif(brand: "xxxx", compatible: ["mif1"])) == .heif)
    }

    @Test("everything else is refused before libvips sees a byte")
    func refused() {
        let samples: [[UInt8]] = [
            [], [0xFF], [0xFF, 0xD8], Array("<svg xmlns=".utf8), [0x1F, 0x8B, 0x08, 0x00], Array("%PDF-1.7".utf8),
            Array("<!doctype html>".utf8), Array("RIFF\u{10}\0\0\0WAVEfmt ".utf8), Array("GIF88a".utf8),
            Self.heif(brand: "mp42", compatible: ["isom", "mp41"]),  // an MP4 video
            Self.heif(brand: "qt  "), [0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50, 0x20, 0x20],  // JPEG 2000
            [0xFF, 0x0A],  // JPEG XL codestream
        ]
        for sample in samples {
            #expect(FormatSniffer.format(of: sample) == nil, "\(sample.prefix(12))")
        }
    }

    @Test("the size a HEIF/AVIF container declares, the largest ispe of meta/iprp/ipco")
    func declaredSize() {
        let ipco = Self.box(
            "ipco", Self.ispe(320, 240) + Self.box("pixi", [0, 0, 0, 0, 3, 8, 8, 8]) + Self.ispe(17000, 17000))
        let meta = Self.box(
            "meta", [0, 0, 0, 0] + Self.box("hdlr", Array(repeating: 0, count: 25)) + Self.box("iprp", ipco))
        let file = Self.heif(brand: "avif", compatible: ["mif1"], boxes: meta)
        let size = file.withUnsafeBytes { ISOBMFF.largestImageSize($0) }
        #expect(size?.width == 17000 && size?.height == 17000)
    }

    @Test("malformed boxes end the walk without trapping")
    func malformed() {
        let cases: [[UInt8]] = [
            Self.heif(brand: "avif") + Self.be32(0xFFFF_FFF0) + Array("meta".utf8),  // a size past the end
            Self.heif(brand: "avif") + Self.be32(4) + Array("meta".utf8),  // a size below the header's
            Self.heif(brand: "avif") + Self.be32(1) + Array("meta".utf8) + [0xFF, 0, 0, 0, 0, 0, 0, 0],  // 64-bit, huge
            Self.heif(brand: "avif") + Self.box("meta", [0, 0]),  // meta without its full-box header
            Self.heif(brand: "avif")
                + Self.box(
                    "meta", [0, 0, 0, 0] + Self.box("iprp", Self.box("ipco", Self.box("ispe", [0, 0, 0, 0, 1])))),
            Array(Self.heif(brand: "avif").prefix(10)),
        ]
        for sample in cases {
            let size = sample.withUnsafeBytes { ISOBMFF.largestImageSize($0) }
            #expect(size == nil)
            _ = FormatSniffer.format(of: sample)
        }
    }
}
