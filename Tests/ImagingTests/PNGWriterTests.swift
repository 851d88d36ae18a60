import CropGeometry
import Testing

@testable import Imaging

/// The PNG writer: files libvips decodes to exactly the pixels written, with exactly the chunks
/// intended, and row filters that invert as the PNG specification says.
@Suite("PNG writer")
struct PNGWriterTests {
    static let fixtures = [
        "size/craft-beer_640x640.jpg", "colour/p3_displayp3-v4_craft-beer.jpg", "orientation/Landscape_6.jpg",
        "colour/rgba_blackbug_2048x1536.png", "formats/webp_lossy_gallery-4_1024x772.webp",
    ]

    static var srgbProfile: [UInt8] {
        get throws { try Vips.library().srgbProfile }
    }

    /// A fixture's decoded square, as the renderer makes it before encoding.
    static func square(_ path: String) throws -> VImage {
        let bytes = try Corpus.bytes(path)
        let header = try renderer().probe(bytes).header
        let options = RenderOptions(format: .png)
        let plan = try CropGeometry.plan(source: header.orientedSize, input: .centred, settings: options.settings)
        return try CropPipeline.decode(
            InputBytes(bytes), header: header, plan: plan, options: options, fallback: false,
            transforms: try RenderResources.shared().iccTransforms, logger: testLogger
        ).image
    }

    @Test("a render's PNG decodes to exactly the pixels it was written from", arguments: fixtures)
    func roundTrip(path: String) throws {
        let square = try Self.square(path)
        let profile = try Self.srgbProfile
        for size in [512, 80] {
            let written = try CropPipeline.resize(square, to: size)
            let rendition = try RenditionEncoder.encode(
                written, format: .png, options: RenderOptions(format: .png), resources: try RenderResources.shared())
            let decoded = try decode(rendition.data)
            #expect(decoded.format == .png)
            #expect(decoded.raster.width == size && decoded.raster.height == size && decoded.raster.bands == 3)
            #expect(firstDifference(decoded.raster.pixels, try written.pixels()) == nil, "\(path) at \(size)")
            #expect(decoded.iccProfile == profile, "the embedded profile is the sRGB profile, byte for byte")
            #expect(
                try PNGFile(rendition.data).chunks.map(\.type) == ["IHDR", "iCCP", "pHYs", "IDAT", "IEND"])
        }
    }

    @Test("the chunks: IHDR for 8-bit RGB, iCCP named icc, pHYs at 72 dpi, one IDAT, valid CRCs")
    func chunks() throws {
        let profile = try Self.srgbProfile
        let data = try RenditionEncoder.png(
            try Self.square("size/craft-beer_640x640.jpg"), writer: try RenderResources.shared().pngWriter)
        let file = try PNGFile(data)
        #expect(file.chunks.map(\.type) == ["IHDR", "iCCP", "pHYs", "IDAT", "IEND"])
        for chunk in file.chunks {
            #expect(chunk.crcIsValid, "\(chunk.type) CRC")
        }
        // 512 × 512, bit depth 8, colour type 2 (truecolour), compression 0, filter method 0, no interlace.
        #expect(file.chunks[0].data == [0, 0, 2, 0, 0, 0, 2, 0, 8, 2, 0, 0, 0])
        // "icc", NUL, compression method 0, then a zlib stream (CMF 0x78: deflate, 32 KiB window).
        #expect(Array(file.chunks[1].data.prefix(6)) == Array("icc".utf8) + [0, 0, 0x78])
        // 2835 pixels per metre (72 dpi, as libvips' pngsave wrote it) on both axes, unit metre.
        #expect(file.chunks[2].data == [0, 0, 0x0B, 0x13, 0, 0, 0x0B, 0x13, 1])
        #expect(file.chunks[3].data.first == 0x78)
        #expect(file.chunks[4].data.isEmpty)
        let decoded = try decode(data)
        #expect(decoded.iccProfile == profile)
        #expect(decoded.interpretation == "srgb" && decoded.bitDepth == 8)
    }

    @Test("the check can fail: a flipped byte breaks the CRC")
    func crcCheckCanFail() throws {
        var data = try Self.write(Self.noise(width: 3, height: 2, seed: 1), width: 3, height: 2)
        data[PNGFile.signature.count + 8] ^= 1  // first byte of IHDR's data
        #expect(try PNGFile(data).chunks[0].crcIsValid == false)
    }

    /// Edge sizes × every filter type: each must decode to exactly what was written.
    static let sizes: [(Int, Int)] = [(1, 1), (2, 2), (3, 1), (1, 5), (7, 5), (13, 13), (129, 3), (511, 17)]

    @Test(
        "1×1, odd widths and tiny squares decode exactly, with every filter type", arguments: PNGWriter.Filter.allCases)
    func edgeSizes(filter: PNGWriter.Filter) throws {
        for (index, (width, height)) in Self.sizes.enumerated() {
            let pixels = Self.noise(width: width, height: height, seed: UInt64(index + 1))
            let data = try Self.write(pixels, width: width, height: height, filter: filter)
            let decoded = try decode(data).raster
            #expect(decoded.width == width && decoded.height == height && decoded.bands == 3)
            #expect(firstDifference(decoded.pixels, pixels) == nil, "\(width)x\(height) \(filter)")
        }
    }

    @Test(
        "gradients with noise, where each filter's prediction matters, decode exactly",
        arguments: PNGWriter.Filter.allCases)
    func gradients(filter: PNGWriter.Filter) throws {
        let (width, height) = (97, 61)
        var random = SplitMix(seed: 7)
        var pixels: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width {
                // Ramps in three directions plus a little noise, wrapping past 255: left, up and
                // upper-left all differ, so Sub, Up, Average and Paeth each predict something else.
                pixels += [
                    UInt8(truncatingIfNeeded: x * 3 + Int(random.next() % 3)),
                    UInt8(truncatingIfNeeded: y * 5 + Int(random.next() % 3)),
                    UInt8(truncatingIfNeeded: (x + y) * 2 + Int(random.next() % 5)),
                ]
            }
        }
        let data = try Self.write(pixels, width: width, height: height, filter: filter)
        #expect(firstDifference(try decode(data).raster.pixels, pixels) == nil)
    }

    @Test("each filter inverts as PNG §9 reconstructs it, Paeth's ties included", arguments: PNGWriter.Filter.allCases)
    func filtersInvert(filter: PNGWriter.Filter) {
        // Every (left, up, upper-left) triple on a coarse grid, to reach Paeth's ties and the wrap-around.
        let levels: [UInt8] = [0, 1, 2, 64, 127, 128, 129, 200, 254, 255]
        var pixels: [UInt8] = []
        for a in levels { for b in levels { for c in levels { pixels += [a, b, c] } } }
        let width = 50
        let height = pixels.count / 3 / width
        let filtered = pixels.withUnsafeBytes { PNGWriter.filter($0, width: width, height: height, with: filter) }
        #expect(filtered.count == (width * 3 + 1) * height)
        #expect(firstDifference(Self.unfilter(filtered, width: width, height: height), pixels) == nil)
    }

    @Test("the Paeth predictor picks as §9.4 says")
    func paeth() {
        // (left, up, upper-left): p = left + up − upper-left; the nearest of the three wins, ties going to
        // left, then up.
        #expect(PNGWriter.paeth(left: 10, up: 20, upLeft: 10) == 20)  // p = 20: up exact
        #expect(PNGWriter.paeth(left: 20, up: 10, upLeft: 10) == 20)  // p = 20: left exact
        #expect(PNGWriter.paeth(left: 5, up: 9, upLeft: 7) == 7)  // p = 7: upper-left exact
        #expect(PNGWriter.paeth(left: 100, up: 200, upLeft: 150) == 150)  // p = 150
        #expect(PNGWriter.paeth(left: 0, up: 6, upLeft: 4) == 0)  // p = 2: left and upper-left tie at 2
        #expect(PNGWriter.paeth(left: 6, up: 0, upLeft: 4) == 0)  // p = 2: up and upper-left tie at 2
        #expect(PNGWriter.paeth(left: 50, up: 60, upLeft: 200) == 50)  // p = −90: left nearest
        #expect(PNGWriter.paeth(left: 255, up: 0, upLeft: 0) == 255)  // p = 255: left exact
    }

    @Test("no profile and no resolution: only IHDR, IDAT and IEND")
    func bare() throws {
        let pixels = Self.noise(width: 4, height: 4, seed: 3)
        let writer = PNGWriter(level: 1, filter: .average, iccProfile: [], pixelsPerMetre: nil)
        let data = try pixels.withUnsafeBytes { try writer.write(rgb: $0, width: 4, height: 4) }
        #expect(try PNGFile(data).chunks.map(\.type) == ["IHDR", "IDAT", "IEND"])
        let decoded = try decode(data)
        #expect(firstDifference(decoded.raster.pixels, pixels) == nil)
        #expect(decoded.iccProfile == nil)
    }

    @Test("every level from stored to the smallest writes the same pixels")
    func levels() throws {
        let pixels = Self.noise(width: 33, height: 9, seed: 5)
        for level in 0...12 {
            let writer = PNGWriter(level: level, filter: .paeth, iccProfile: [], pixelsPerMetre: 2835)
            let data = try pixels.withUnsafeBytes { try writer.write(rgb: $0, width: 33, height: 9) }
            #expect(firstDifference(try decode(data).raster.pixels, pixels) == nil, "level \(level)")
        }
    }

    @Test("a size that does not match the bytes, a zero side or a bad level is refused")
    func refused() throws {
        let pixels = [UInt8](repeating: 7, count: 12)
        let writer = PNGWriter(level: 1, filter: .up, iccProfile: [], pixelsPerMetre: nil)
        for (width, height) in [(4, 2), (0, 4), (4, 0), (-2, -2), (Int.max, 2)] {
            #expect(throws: PNGWriteError.self) {
                try pixels.withUnsafeBytes { try writer.write(rgb: $0, width: width, height: height) }
            }
        }
        let badLevel = PNGWriter(level: 13, filter: .up, iccProfile: [], pixelsPerMetre: nil)
        #expect(throws: PNGWriteError.self) {
            try pixels.withUnsafeBytes { try badLevel.write(rgb: $0, width: 2, height: 2) }
        }
        #expect(try pixels.withUnsafeBytes { try writer.write(rgb: $0, width: 2, height: 2) }.isEmpty == false)
    }

    @Test("the encoder refuses anything but 3 uchar bands")
    func threeUcharBands() throws {
        let grey = try VImage.fromPixels([1, 2, 3, 4], width: 2, height: 2, bands: 1)
        #expect(throws: ImagingError.self) {
            try RenditionEncoder.png(grey, writer: try RenderResources.shared().pngWriter)
        }
    }

    // MARK: Helpers

    static func write(
        _ pixels: [UInt8], width: Int, height: Int, filter: PNGWriter.Filter = RenditionEncoder.pngFilter
    ) throws -> [UInt8] {
        let writer = PNGWriter(
            level: RenditionEncoder.pngLevel, filter: filter, iccProfile: try srgbProfile,
            pixelsPerMetre: RenditionEncoder.pngPixelsPerMetre)
        return try pixels.withUnsafeBytes { try writer.write(rgb: $0, width: width, height: height) }
    }

    /// Where two sample arrays first differ ("count" when only the lengths do), nil when they are equal:
    /// a short failure message where comparing the arrays would print every sample.
    func firstDifference(_ got: [UInt8], _ wanted: [UInt8]) -> String? {
        if let index = (0..<min(got.count, wanted.count)).first(where: { got[$0] != wanted[$0] }) {
            return "sample \(index): \(got[index]) != \(wanted[index])"
        }
        return got.count == wanted.count ? nil : "count \(got.count) != \(wanted.count)"
    }

    static func noise(width: Int, height: Int, seed: UInt64) -> [UInt8] {
        var random = SplitMix(seed: seed)
        return (0..<(width * height * 3)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }

    /// PNG §9 reconstruction, written from the specification independently of the writer.
    static func unfilter(_ data: [UInt8], width: Int, height: Int) -> [UInt8] {
        let stride = width * 3
        var out = [UInt8](repeating: 0, count: stride * height)
        for y in 0..<height {
            let type = data[y * (stride + 1)]
            for x in 0..<stride {
                let filtered = Int(data[y * (stride + 1) + 1 + x])
                let a = x >= 3 ? Int(out[y * stride + x - 3]) : 0
                let b = y > 0 ? Int(out[(y - 1) * stride + x]) : 0
                let c = x >= 3 && y > 0 ? Int(out[(y - 1) * stride + x - 3]) : 0
                let predictor: Int
                switch type {
                case 0: predictor = 0
                case 1: predictor = a
                case 2: predictor = b
                case 3: predictor = (a + b) / 2
                case 4:
                    let p = a + b - c
                    let (pa, pb, pc) = (abs(p - a), abs(p - b), abs(p - c))
                    predictor = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c)
                default: return []
                }
                out[y * stride + x] = UInt8((filtered + predictor) & 0xFF)
            }
        }
        return out
    }
}

/// A PNG's chunk list, read without any PNG library.
struct PNGFile {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    struct Chunk {
        var type: String
        var data: [UInt8]
        var crc: UInt32

        var crcIsValid: Bool { CRC32.of(Array(type.utf8) + data) == crc }
    }

    var chunks: [Chunk] = []

    init(_ bytes: [UInt8]) throws {
        guard bytes.starts(with: Self.signature) else { throw TestFailure("no PNG signature") }
        func u32(_ offset: Int) -> UInt32 {
            bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }
        var offset = Self.signature.count
        while offset < bytes.count {
            guard offset + 12 <= bytes.count else { throw TestFailure("truncated chunk at \(offset)") }
            let length = Int(u32(offset))
            guard offset + 12 + length <= bytes.count else { throw TestFailure("chunk past the end at \(offset)") }
            chunks.append(
                Chunk(
                    type: String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self),
                    data: Array(bytes[offset + 8..<offset + 8 + length]), crc: u32(offset + 8 + length)))
            offset += 12 + length
        }
    }
}

/// CRC-32 (ISO 3309 / PNG), bit by bit: slow and independent of libdeflate.
enum CRC32 {
    static func of(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
