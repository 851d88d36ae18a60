import Foundation
import Testing

@testable import Imaging

@Suite("Format by bytes")
struct FormatSnifferTests {
    typealias Build = ISOBMFFBuilder

    @Test("the accepted formats by their magic numbers")
    func accepted() {
        #expect(FormatSniffer.format(of: [0xFF, 0xD8, 0xFF, 0xE0, 0, 0]) == .jpeg)
        #expect(FormatSniffer.format(of: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0]) == .png)
        #expect(FormatSniffer.format(of: Array("GIF89a....".utf8)) == .gif)
        #expect(FormatSniffer.format(of: Array("GIF87a....".utf8)) == .gif)
        #expect(FormatSniffer.format(of: Array("RIFF\u{10}\0\0\0WEBPVP8 ".utf8)) == .webp)
        #expect(FormatSniffer.format(of: [0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0]) == .tiff)
        #expect(FormatSniffer.format(of: [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8]) == .tiff)
        #expect(FormatSniffer.format(of: [0x49, 0x49, 0x2B, 0x00, 8, 0, 0, 0]) == .tiff)  // BigTIFF
        #expect(FormatSniffer.format(of: Build.ftyp("heic", compatible: ["mif1", "heic"])) == .heif)
        #expect(FormatSniffer.format(of: Build.ftyp("avif", compatible: ["avif", "mif1"])) == .heif)
        // A brand libheif reads, listed only among the compatible ones.
        #expect(FormatSniffer.format(of: Build.ftyp("xxxx", compatible: ["mif1"])) == .heif)
    }

    @Test("everything else is refused before libvips sees a byte")
    func refused() {
        let samples: [[UInt8]] = [
            [], [0xFF], [0xFF, 0xD8], Array("<svg xmlns=".utf8), [0x1F, 0x8B, 0x08, 0x00], Array("%PDF-1.7".utf8),
            Array("<!doctype html>".utf8), Array("RIFF\u{10}\0\0\0WAVEfmt ".utf8), Array("GIF88a".utf8),
            Array("GIF8".utf8), Array("RIFF\u{10}\0\0\0".utf8), [0x49, 0x49, 0x2A],
            [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A],  // PNG signature cut short
            [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0D, 0x0A, 0x1A, 0x0A],  // a CR added in transfer
            Build.ftyp("mp42", compatible: ["isom", "mp41"]),  // an MP4 video
            Build.ftyp("qt  "), [0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50, 0x20, 0x20],  // QuickTime, JPEG 2000
            [0xFF, 0x0A],  // JPEG XL codestream
            Array("P6\n400 400\n255\n".utf8),  // PPM, which libvips could read
        ]
        for sample in samples {
            #expect(FormatSniffer.format(of: sample) == nil, "\(sample.prefix(12))")
        }
    }

    @Test("an ftyp box must be whole, of a sane size, to make a file HEIF")
    func fileTypeBox() {
        var cut = Build.ftyp("avif", compatible: ["mif1"])
        cut.removeLast()  // shorter than its declared size
        var huge = Build.ftyp("avif")
        huge.replaceSubrange(0..<4, with: Build.be32(0x0010_0000))  // 1 MB of "brands"
        var odd = Build.ftyp("avif") + [0]
        odd.replaceSubrange(0..<4, with: Build.be32(17))  // not a whole number of brands
        for sample in [cut, huge, odd, Array(Build.ftyp("avif").prefix(11))] {
            #expect(FormatSniffer.format(of: sample) == nil)
        }
    }

    @Test("the test photos: every readable file is sniffed as the format libvips' loader reports")
    func corpus() throws {
        let expected: [String: ImageFormat] = [
            "jpg": .jpeg, "jpeg": .jpeg, "png": .png, "webp": .webp, "heic": .heif, "avif": .heif, "gif": .gif,
            "tif": .tiff, "tiff": .tiff,
        ]
        for folder in ["orientation", "colour", "camera", "panorama", "formats", "metadata", "size"] {
            for path in try Corpus.files(in: folder) {
                guard let format = expected[(path as NSString).pathExtension.lowercased()] else { continue }
                #expect(FormatSniffer.format(of: try Corpus.bytes(path)) == format, "\(path)")
            }
        }
        // A JPEG named .png (in the larger corpus only): the bytes decide.
        if Corpus.has("bad/jpeg-data-with-png-extension.png") {
            #expect(FormatSniffer.format(of: try Corpus.bytes("bad/jpeg-data-with-png-extension.png")) == .jpeg)
        }
    }
}
