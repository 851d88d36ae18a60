import CropGeometry
import Foundation
import Testing

@testable import Imaging

/// Sizes read from PNG, GIF, JPEG, WebP and TIFF headers in Swift, before libvips opens the file.
@Suite("Declared sizes from header bytes")
struct DeclaredSizeTests {
    static func size(_ format: ImageFormat, _ bytes: [UInt8]) -> PixelSize? {
        (try? DeclaredSize.of(format, in: bytes)) ?? nil
    }

    static func jpegSegment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
        [0xFF, marker] + be16(payload.count + 2) + payload
    }

    static func sof(_ marker: UInt8 = 0xC0, width: Int, height: Int) -> [UInt8] {
        jpegSegment(marker, [8] + be16(height) + be16(width) + [1, 1, 0x11, 0])
    }

    @Test("PNG: IHDR, the first chunk")
    func png() {
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let ihdr = be32(13) + Array("IHDR".utf8) + be32(65535) + be32(40000) + [8, 0, 0, 0, 0]
        #expect(Self.size(.png, signature + ihdr) == PixelSize(width: 65535, height: 40000))
        #expect(Self.size(.png, signature + be32(13) + Array("tEXt".utf8) + be32(1) + be32(1)) == nil)
        #expect(Self.size(.png, Array((signature + ihdr).prefix(22))) == nil)
    }

    @Test("GIF: the logical screen")
    func gif() {
        #expect(
            Self.size(.gif, Array("GIF89a".utf8) + le16(65535) + le16(300))
                == PixelSize(
                    width: 65535, height: 300))
        #expect(Self.size(.gif, Array("GIF89a".utf8) + [1, 0, 1]) == nil)
    }

    @Test("JPEG: the first SOF, past APPn segments (an EXIF thumbnail's SOF inside APP1 is skipped)")
    func jpeg() {
        let thumbnail = Self.sof(width: 160, height: 120)
        let app1 = Self.jpegSegment(0xE1, Array("Exif\0\0".utf8) + [0xFF, 0xD8] + thumbnail)
        let dht = Self.jpegSegment(0xC4, [0x00] + Array(repeating: 0, count: 16))
        let soi: [UInt8] = [0xFF, 0xD8]
        let progressive = soi + app1 + dht + [0xFF, 0xFF] + Self.sof(0xC2, width: 6000, height: 4000)
        #expect(Self.size(.jpeg, progressive) == PixelSize(width: 6000, height: 4000))
        // Stray bytes before a marker are skipped, as libjpeg does.
        #expect(
            Self.size(.jpeg, soi + [0, 0, 0] + Self.sof(width: 10, height: 20)) == PixelSize(width: 10, height: 20))
        // A scan before any frame header, a cut file, a zero segment length: not known here.
        #expect(Self.size(.jpeg, soi + Self.jpegSegment(0xDA, [0]) + Self.sof(width: 1, height: 1)) == nil)
        #expect(Self.size(.jpeg, Array((soi + Self.sof(width: 10, height: 20)).prefix(8))) == nil)
        #expect(Self.size(.jpeg, soi + [0xFF, 0xE0, 0, 0]) == nil)
    }

    @Test("WebP: VP8X canvas, VP8L and VP8 frame headers")
    func webp() {
        let riff = Array("RIFF".utf8) + le32(100) + Array("WEBP".utf8)
        let vp8x = riff + Array("VP8X".utf8) + le32(10) + [0, 0, 0, 0] + [0xFF, 0x3F, 0] + [0x0F, 0x27, 0]
        #expect(Self.size(.webp, vp8x) == PixelSize(width: 16384, height: 10000))
        let bits = (999) | (499 << 14)
        let vp8l = riff + Array("VP8L".utf8) + le32(5) + [0x2F] + le32(bits)
        #expect(Self.size(.webp, vp8l) == PixelSize(width: 1000, height: 500))
        let vp8 =
            riff + Array("VP8 ".utf8) + le32(10) + [0, 0, 0] + [0x9D, 0x01, 0x2A] + le16(1024)
            + le16(772)
        #expect(Self.size(.webp, vp8) == PixelSize(width: 1024, height: 772))
        #expect(Self.size(.webp, riff + Array("VP8 ".utf8) + le32(10) + [0, 0, 0, 1, 2, 3, 0, 4, 0, 3]) == nil)
    }

    @Test("TIFF: ImageWidth and ImageLength of the first IFD, either byte order, SHORT or LONG")
    func tiff() {
        let little =
            [0x49, 0x49, 0x2A, 0x00] + le32(8) + le16(2)
            + le16(256) + le16(4) + le32(1) + le32(70000)
            + le16(257) + le16(3) + le32(1) + le16(300) + [0, 0]
        #expect(Self.size(.tiff, little) == PixelSize(width: 70000, height: 300))
        let big =
            [0x4D, 0x4D, 0x00, 0x2A] + be32(8) + be16(2)
            + be16(257) + be16(4) + be32(1) + be32(4000)
            + be16(256) + be16(3) + be32(1) + be16(6000) + [0, 0]
        #expect(Self.size(.tiff, big) == PixelSize(width: 6000, height: 4000))
        // The directory offset points past the end.
        #expect(Self.size(.tiff, [0x49, 0x49, 0x2A, 0x00] + le32(4000)) == nil)
    }

    @Test("the test photos: what the header bytes declare is what libvips reports")
    func agreesWithLibvips() throws {
        var checked = 0
        for folder in ["orientation", "colour", "camera", "panorama", "formats", "metadata", "size"] {
            for path in try Corpus.files(in: folder) where !path.hasSuffix(".md") {
                let bytes = try Corpus.bytes(path)
                guard let format = FormatSniffer.format(of: bytes) else { continue }
                let header = try renderer(minSide: 1).probe(bytes).header
                let declared = try #require(try DeclaredSize.of(format, in: bytes), "\(path)")
                if format == .heif {
                    #expect(declared.pixelCount == header.storedSize.pixelCount, "\(path)")
                } else {
                    #expect(declared == header.storedSize, "\(path)")
                }
                checked += 1
            }
        }
        // The repository's fixtures alone hold 23 such files; the larger corpus adds more.
        #expect(checked >= 20)
    }
}

private func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
private func le32(_ value: Int) -> [UInt8] { le16(value & 0xFFFF) + le16(value >> 16) }
private func be16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
private func be32(_ value: Int) -> [UInt8] { be16(value >> 16) + be16(value & 0xFFFF) }
