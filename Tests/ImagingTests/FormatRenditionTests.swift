import CropGeometry
import Foundation
import Testing

@testable import Imaging

/// docs/ARCHITECTURE.md §2 step 7 and docs/FORMATS.md: several formats per size from one decode, each a 3-band 8-bit
/// sRGB square of the size asked for, with the sRGB profile and no other metadata.
@Suite("Formats per rendition")
struct FormatRenditionTests {
    /// A photo with EXIF (orientation 6) and one with EXIF and XMP (an iPhone HEIC): what must not reach any format.
    static let sources = ["orientation/Landscape_6.jpg", "formats/heic_iphone-7-plus_1008x756.heic"]

    static func options(avatar: [AvatarFormat], extras: [AvatarFormat], sizes: [Int] = [128]) -> RenderOptions {
        var options = RenderOptions(extraSizes: sizes)
        options.formats = RenditionFormats(avatar: avatar, extras: extras)
        return options
    }

    @Test("every format of every size: the right size, format and order; sRGB, 8 bits, 3 bands", arguments: sources)
    func everyFormat(path: String) throws {
        let result = try render(
            path, options: Self.options(avatar: [.png, .webp, .avif, .jpeg], extras: [.webp, .avif]))
        let renditions = [result.avatar] + result.extras
        #expect(renditions.map(\.size) == [512, 512, 512, 512, 128, 128])
        #expect(renditions.map(\.format) == [.png, .webp, .avif, .jpeg, .webp, .avif])
        #expect(result.formats == [.png, .webp, .avif, .jpeg])
        #expect(Set(result.timings.encodeByFormat.keys) == [.png, .webp, .avif, .jpeg])
        let loaders: [AvatarFormat: ImageFormat] = [.png: .png, .jpeg: .jpeg, .webp: .webp, .avif: .heif]
        for rendition in renditions {
            let output = try decode(rendition.data)
            #expect(output.format == loaders[rendition.format], "\(rendition.format) at \(rendition.size)")
            #expect(output.raster.width == rendition.size && output.raster.height == rendition.size)
            #expect(output.raster.bands == 3 && output.bitDepth == 8 && output.interpretation == "srgb")
            let profile = try #require(output.iccProfile, "\(rendition.format) has no ICC profile")
            #expect(iccDescription(profile)?.contains("sRGB") == true)
        }
    }

    @Test("the lossy formats look like the PNG (mean error per sample under 4 of 255)")
    func lossyCloseToPNG() throws {
        let result = try render(
            "formats/heic_iphone-7-plus_1008x756.heic",
            options: Self.options(avatar: [.png, .webp, .avif], extras: [], sizes: []))
        let png = try decode(result.avatar.data).raster
        for rendition in result.extras {
            let lossy = try decode(rendition.data).raster
            let total = zip(png.pixels, lossy.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
            let mean = Double(total) / Double(png.pixels.count)
            #expect(mean < 4, "\(rendition.format): mean error \(mean)")
        }
    }

    /// A WebP file's chunks: the file is built from the pixels alone, so nothing but the profile sits beside the
    /// bitstream (libvips 8.14's webpsave would add an EXIF chunk, docs/UPSTREAM-BUGS.md).
    @Test("WebP: exactly VP8X (ICC flag only), ICCP and VP8; no EXIF or XMP chunk", arguments: sources)
    func webpChunks(path: String) throws {
        let result = try render(path, options: Self.options(avatar: [.webp], extras: [.webp]))
        for rendition in [result.avatar] + result.extras {
            let chunks = try Self.riffChunks(rendition.data)
            #expect(chunks.map(\.type) == ["VP8X", "ICCP", "VP8 "])
            // VP8X flags: bit 5 is ICC; EXIF (bit 3), XMP (bit 2), alpha (bit 4) and animation (bit 1) are clear.
            #expect(chunks.first?.payload.first == 0x20)
            #expect(chunks[1].payload == (try RenderResources.shared().srgbProfile))
        }
    }

    @Test("AVIF: no Exif or XMP item, one colour profile (sRGB)", arguments: sources)
    func avifItems(path: String) throws {
        let result = try render(path, options: Self.options(avatar: [.avif], extras: [.avif]))
        for rendition in [result.avatar] + result.extras {
            #expect(!contains(rendition.data, "Exif"))
            #expect(!contains(rendition.data, "mime"), "an XMP item is a `mime` item")
            #expect(!contains(rendition.data, "xmpmeta"))
            #expect(contains(rendition.data, "av01"))
            #expect(contains(rendition.data, "prof"), "colr box of type prof: the ICC profile")
        }
    }

    @Test("the checks can fail: the sources carry EXIF, and a WebP with EXIF shows it as a chunk")
    func checksCanFail() throws {
        #expect(try decode(Corpus.bytes("orientation/Landscape_6.jpg")).fields.contains("exif-data"))
        #expect(contains(try Corpus.bytes("formats/heic_iphone-7-plus_1008x756.heic"), "Exif"))
        // A WebP with an EXIF chunk, as a saver that keeps metadata writes it.
        var chunk = Array("EXIF".utf8) + [4, 0, 0, 0] + Array("Exif".utf8)
        let webp = try render(Self.sources[0], options: Self.options(avatar: [.webp], extras: [], sizes: []))
            .avatar.data
        chunk = Array(webp[12...]) + chunk
        let file = Array("RIFF".utf8) + Self.littleEndian(chunk.count + 4) + Array("WEBP".utf8) + chunk
        #expect(try Self.riffChunks(file).map(\.type).contains("EXIF"))
    }

    @Test("a format list with a format twice, or none, is refused")
    func malformedLists() {
        for formats in [
            RenditionFormats(avatar: [.png, .png]), RenditionFormats(avatar: []),
            RenditionFormats(avatar: [.png], extras: [.webp, .webp]),
        ] {
            var options = RenderOptions(extraSizes: [80])
            options.formats = formats
            #expect(throws: ImagingError.self) { try options.validate() }
        }
    }

    @Test("the encoder settings' ranges are checked")
    func encoderSettings() {
        for settings in [
            EncoderSettings(webpQuality: 0), EncoderSettings(avifQuality: 101), EncoderSettings(avifSpeed: 10),
        ] {
            #expect(throws: ImagingError.self) { try RenderOptions(encoder: settings).validate() }
        }
        #expect(throws: Never.self) { try RenderOptions(encoder: EncoderSettings()).validate() }
    }

    @Test("WebP and AVIF encodes are budgeted in the memory estimate; PNG and JPEG add nothing")
    func memoryEstimate() throws {
        #expect(MemoryAdmission.encoderBytes(options: RenderOptions()) == 0)
        #expect(MemoryAdmission.encoderBytes(options: RenderOptions(format: .jpeg, extraSizes: [1024])) == 0)
        let avif = Self.options(avatar: [.png, .avif], extras: [.png], sizes: [1024])
        #expect(MemoryAdmission.encoderBytes(options: avif) == 512 * 512 * MemoryAdmission.lossyEncoderBytesPerPixel)
        let webp = Self.options(avatar: [.png], extras: [.webp], sizes: [1024])
        #expect(MemoryAdmission.encoderBytes(options: webp) == 1024 * 1024 * MemoryAdmission.lossyEncoderBytesPerPixel)
    }

    // MARK: - RIFF

    struct Chunk {
        var type: String
        var payload: [UInt8]
    }

    static func riffChunks(_ data: [UInt8]) throws -> [Chunk] {
        guard data.count >= 12, String(decoding: data[0..<4], as: UTF8.self) == "RIFF",
            String(decoding: data[8..<12], as: UTF8.self) == "WEBP"
        else { throw TestFailure("not a RIFF WEBP file") }
        guard Int(data[4]) | Int(data[5]) << 8 | Int(data[6]) << 16 | Int(data[7]) << 24 == data.count - 8 else {
            throw TestFailure("RIFF size does not match the file")
        }
        var chunks: [Chunk] = []
        var offset = 12
        while offset + 8 <= data.count {
            let size =
                Int(data[offset + 4]) | Int(data[offset + 5]) << 8 | Int(data[offset + 6]) << 16
                | Int(data[offset + 7]) << 24
            guard offset + 8 + size <= data.count else { throw TestFailure("chunk overruns the file") }
            chunks.append(
                Chunk(
                    type: String(decoding: data[offset..<offset + 4], as: UTF8.self),
                    payload: Array(data[(offset + 8)..<(offset + 8 + size)])))
            offset += 8 + size + (size & 1)
        }
        return chunks
    }

    static func littleEndian(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
}
