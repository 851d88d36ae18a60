import CropGeometry
import Crypto
import Foundation
import Testing

@testable import Imaging

/// The JPEG region decoder on its own (libjpeg through CJPEGRegion): a region's pixels are exactly
/// the same rectangle of a whole-image decode at every scale (the iMCU alignment and trimming), and
/// damaged data, cancellation and unsupported files end the way the renderer relies on.
@Suite("JPEG region decoder")
struct JPEGRegionDecoderTests {
    static let photos = [
        "orientation/Landscape_1.jpg", "orientation/Landscape_6.jpg", "colour/p3_displayp3-v4_craft-beer.jpg",
        "colour/grey_cd1.1_531x373.jpg", "size/craft-beer_640x640.jpg",
        "formats/jpeg_progressive_landscape-1_1350x900.jpg",
    ]

    static func input(_ path: String) throws -> InputBytes { InputBytes(try Corpus.bytes(path)) }

    /// `width × height` pixels of `whole` (a decode of the whole scaled image) at x, y.
    static func cut(_ whole: Raster, x: Int, y: Int, width: Int, height: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(width * height * whole.bands)
        for row in y..<(y + height) {
            let start = (row * whole.width + x) * whole.bands
            out += whole.pixels[start..<(start + width * whole.bands)]
        }
        return out
    }

    static func raster(_ region: JPEGRegionDecoder.Region) throws -> Raster {
        Raster(
            width: region.image.width, height: region.image.height, bands: region.image.bands,
            pixels: try region.image.pixels())
    }

    @Test("a region is exactly that rectangle of the whole decode, at scales 1/1 to 1/8", arguments: photos)
    func regionEqualsWhole(path: String) throws {
        try Vips.initialise()
        let input = try Self.input(path)
        let header = try JPEGRegionDecoder.header(of: input)
        var generator = SplitMix(seed: UInt64(path.utf8.count))
        for scale in [1, 2, 4, 8] {
            let scaled = PixelSize(
                width: (header.size.width + scale - 1) / scale, height: (header.size.height + scale - 1) / scale)
            let whole = try JPEGRegionDecoder.decode(
                input, scale: scale, x: 0, y: 0, width: scaled.width, height: scaled.height, cancel: nil)
            #expect(whole.scaledSize == scaled)
            #expect(whole.decodedColumns == 0..<scaled.width)
            let wholeRaster = try Self.raster(whole)
            // Corners, edges, iMCU boundaries and random rectangles.
            var rectangles = [
                (0, 0, 1, 1), (scaled.width - 1, scaled.height - 1, 1, 1), (16, 16, 17, 9), (15, 17, 33, 31),
                (0, scaled.height / 2, scaled.width, 3), (scaled.width / 2, 0, 5, scaled.height),
            ].filter { $0.0 + $0.2 <= scaled.width && $0.1 + $0.3 <= scaled.height }
            for _ in 0..<24 {
                let width = 1 + generator.next(below: min(scaled.width, 400))
                let height = 1 + generator.next(below: min(scaled.height, 400))
                rectangles.append(
                    (
                        generator.next(below: scaled.width - width + 1),
                        generator.next(below: scaled.height - height + 1),
                        width, height
                    ))
            }
            for (x, y, width, height) in rectangles {
                let region = try JPEGRegionDecoder.decode(
                    input, scale: scale, x: x, y: y, width: width, height: height, cancel: nil)
                #expect(region.image.width == width && region.image.height == height)
                #expect(
                    try region.image.pixels() == Self.cut(wholeRaster, x: x, y: y, width: width, height: height),
                    "\(path) 1/\(scale): region \(x),\(y) \(width)×\(height) differs from the whole decode")
                // The decoded columns: from an iMCU boundary at or left of one pixel before the
                // region, to one pixel after it (the margin fancy upsampling needs), inside the image.
                let columns = region.decodedColumns
                let iMCU = (header.components == 1 ? 8 : 8 * header.maxHorizontalSampling) / scale
                #expect(columns.lowerBound % max(1, iMCU) == 0, "start \(columns.lowerBound) not on a \(iMCU) px iMCU")
                #expect(columns.lowerBound <= max(0, x - 1))
                #expect(columns.lowerBound > max(0, x - 1) - max(1, iMCU))
                #expect(columns.upperBound == min(scaled.width, x + width + 1))
            }
        }
    }

    @Test("the header facts the decoder choice needs")
    func headerFacts() throws {
        let baseline = try JPEGRegionDecoder.header(of: Self.input("orientation/Landscape_1.jpg"))
        #expect(baseline.size == PixelSize(width: 1350, height: 900))
        #expect(baseline.colour == .yCbCr && baseline.components == 3)
        #expect(!baseline.multiScan && !baseline.arithmeticCoding && baseline.precision == 8)
        let progressive = try JPEGRegionDecoder.header(
            of: Self.input("formats/jpeg_progressive_landscape-1_1350x900.jpg"))
        #expect(progressive.multiScan)
        let cmyk = try JPEGRegionDecoder.header(of: Self.input("colour/cmyk_swop-profile_channel.jpg"))
        #expect(cmyk.components == 4 && cmyk.colour == .ycck && cmyk.adobeTransform == 2)
        let grey = try JPEGRegionDecoder.header(of: Self.input("colour/grey_cd1.1_531x373.jpg"))
        #expect(grey.colour == .grey && grey.components == 1)
    }

    @Test("the embedded ICC profile comes with the region")
    func iccProfile() throws {
        try Vips.initialise()
        let path = "colour/p3_displayp3-v4_craft-beer.jpg"
        let region = try JPEGRegionDecoder.decode(
            Self.input(path), scale: 2, x: 10, y: 10, width: 100, height: 100, cancel: nil)
        let expected = try VipsLoader.open(Self.input(path), as: .jpeg).iccProfile
        #expect(region.image.iccProfile != nil)
        #expect(region.image.iccProfile == expected)
        let none = try JPEGRegionDecoder.decode(
            Self.input("orientation/Landscape_1.jpg"), scale: 1, x: 0, y: 0, width: 10, height: 10, cancel: nil)
        #expect(none.image.iccProfile == nil)
    }

    @Test("CMYK is declined, not decoded; a region outside the image too")
    func unsupported() throws {
        for (path, x) in [("colour/cmyk_swop-profile_channel.jpg", 0), ("orientation/Landscape_1.jpg", 1341)] {
            let input = try Self.input(path)
            do {
                _ = try JPEGRegionDecoder.decode(input, scale: 1, x: x, y: 0, width: 10, height: 10, cancel: nil)
                Issue.record("\(path) decoded")
            } catch {
                #expect(error.kind == .unsupported, "\(path): \(error.message)")
            }
        }
        // Scale 1/8 of 1350 is 169 columns: a region ending at 169 fits, one at 170 does not.
        let input = try Self.input("orientation/Landscape_1.jpg")
        #expect(throws: Never.self) {
            _ = try JPEGRegionDecoder.decode(input, scale: 8, x: 159, y: 0, width: 10, height: 10, cancel: nil)
        }
        #expect(throws: JPEGRegionDecoder.Failure.self) {
            _ = try JPEGRegionDecoder.decode(input, scale: 8, x: 160, y: 0, width: 10, height: 10, cancel: nil)
        }
    }

    @Test("a progressive file's DC preview is its 1/8 image from the DC scans alone; other files are declined")
    func dcPreview() throws {
        try Vips.initialise()
        let path = "formats/jpeg_progressive_landscape-1_1350x900.jpg"
        let bytes = try Corpus.bytes(path)
        let preview = try #require(try JPEGRegionDecoder.dcPreview(InputBytes(bytes)))
        // 1350 × 900 at 1/8, rounded up as libjpeg scales.
        #expect(preview.width == 169 && preview.height == 113 && preview.bands == 3)
        let whole = try JPEGRegionDecoder.decode(
            InputBytes(bytes), scale: 8, x: 0, y: 0, width: 169, height: 113, cancel: nil)
        let previewRaster = Raster(width: 169, height: 113, bands: 3, pixels: try preview.pixels())
        let difference = previewRaster.meanAbsoluteDifference(try Self.raster(whole))
        // The same 1/8 image but for the AC scans' and the last DC bits' share: a few levels.
        #expect(difference < 4, "mean difference \(difference)")
        // Only the scans before the first AC scan are read: the file cut at its second scan gives the same pixels,
        // while a whole decode of the cut file runs out of data.
        let secondScan = try #require(Self.markerOffsets(0xDA, in: bytes).dropFirst().first)
        let cut = InputBytes(Array(bytes.prefix(secondScan)))
        #expect(try JPEGRegionDecoder.dcPreview(cut)?.pixels() == previewRaster.pixels)
        #expect(throws: JPEGRegionDecoder.Failure.self) {
            _ = try JPEGRegionDecoder.decode(cut, scale: 8, x: 0, y: 0, width: 169, height: 113, cancel: nil)
        }
        // A sequential file, and a progressive CMYK one, are left to libvips.
        #expect(try JPEGRegionDecoder.dcPreview(Self.input("orientation/Landscape_1.jpg")) == nil)
        #expect(try JPEGRegionDecoder.dcPreview(Self.input("colour/cmyk_swop-profile_channel.jpg")) == nil)
        // Cut inside the DC scan: out of data, an error.
        let firstScan = try #require(Self.markerOffsets(0xDA, in: bytes).first)
        #expect(throws: JPEGRegionDecoder.Failure.self) {
            _ = try JPEGRegionDecoder.dcPreview(InputBytes(Array(bytes.prefix(firstScan + 200))))
        }
    }

    /// Progressive files made for this test (Tests/Fixtures/SOURCES.md) — grey, RGB, 4:2:0 with restart markers in
    /// every scan, and 4:2:2 whose luma DC comes in a first scan and a refinement, then an AC scan, then the chroma
    /// DC scan — and the SHA-256 of the pixels libjpeg-turbo 2.1.5 gives from the same scans at 1/8 (buffered-image
    /// mode, output after the scan that completes every component's DC, block smoothing off: the decoder
    /// `CJPEGDCPreview.c` replaced, as of commit 34240d9).
    static let progressivePreviews = [
        (
            "formats/jpeg_progressive_landscape-1_1350x900.jpg",
            "4032151681a1cc1da7076380ebe94370d267bfe76bf08043c34dc20049a1dca0"
        ),
        (
            "formats/jpeg_progressive-grey-restarts_landscape-1_405x270.jpg",
            "664a2022a0375ac61c3ff905e9147c16ba7e1caae8c6c6e7b951c7eae7cff3b1"
        ),
        (
            "formats/jpeg_progressive-rgb_landscape-1_405x270.jpg",
            "35efe371534596f27cd300e879443b74f2000f201c6a6b7b6f27b24b3e70c875"
        ),
        (
            "formats/jpeg_progressive-420-restarts_landscape-1_405x270.jpg",
            "b81ca8ec351e2769f8c6d696d6f85871663576df4b6751f4b258011230c7c8c1"
        ),
        (
            "formats/jpeg_progressive-422-dc-scans-apart_landscape-1_405x270.jpg",
            "d93b3ac2f232d2f9859420d942421f15caa6342b60858684d8b9281fc4f6569f"
        ),
    ]

    @Test(
        "the DC preview is libjpeg's 1/8 image of the same DC scans, byte for byte, and close to the whole decode's",
        arguments: progressivePreviews)
    func dcPreviewIsLibjpegsDC(path: String, libjpegSHA256: String) throws {
        try Vips.initialise()
        let bytes = try Corpus.bytes(path)
        let preview = try #require(try JPEGRegionDecoder.dcPreview(InputBytes(bytes)))
        let pixels = try preview.pixels()
        #expect(SHA256.hash(data: pixels).map { String(format: "%02x", $0) }.joined() == libjpegSHA256)
        let whole = try JPEGRegionDecoder.decode(
            InputBytes(bytes), scale: 8, x: 0, y: 0, width: preview.width, height: preview.height, cancel: nil)
        #expect(whole.scaledSize == PixelSize(width: preview.width, height: preview.height))
        let difference = Raster(width: preview.width, height: preview.height, bands: preview.bands, pixels: pixels)
            .meanAbsoluteDifference(try Self.raster(whole))
        // Only the lowest DC bits (and block smoothing's share) differ: a few levels.
        #expect(difference < 4, "mean difference \(difference)")
    }

    /// Where the markers `0xFF code` start in `bytes` (a test file's own markers; entropy-coded data never holds
    /// an unstuffed 0xFF followed by a marker code other than a restart).
    static func markerOffsets(_ code: UInt8, in bytes: [UInt8]) -> [Int] {
        bytes.indices.dropLast().filter { bytes[$0] == 0xFF && bytes[$0 + 1] == code }
    }

    @Test("running out of data is an error (as libvips' fail_on=error), not grey rows")
    func truncated() throws {
        let whole = try Corpus.bytes("orientation/Landscape_1.jpg")
        let cut = InputBytes(Array(whole.prefix(whole.count / 3)))
        // The top rows are in the bytes that are left; the bottom ones are not.
        let top = try JPEGRegionDecoder.decode(cut, scale: 1, x: 0, y: 0, width: 640, height: 100, cancel: nil)
        #expect(top.image.height == 100)
        do {
            _ = try JPEGRegionDecoder.decode(cut, scale: 1, x: 0, y: 800, width: 640, height: 100, cancel: nil)
            Issue.record("rows past the end decoded")
        } catch {
            #expect(error.kind == .corrupt)
            #expect(error.message.contains("Premature end"), "\(error.message)")
        }
        // A header cut short.
        #expect(throws: JPEGRegionDecoder.Failure.self) {
            _ = try JPEGRegionDecoder.header(of: InputBytes(Array(whole.prefix(100))))
        }
    }

    @Test("warnings libvips tolerates are tolerated and counted")
    func warnings() throws {
        try Vips.initialise()
        let bytes = JPEGEditing.withExtraneousBytes(try Corpus.bytes("orientation/Landscape_1.jpg"))
        let region = try JPEGRegionDecoder.decode(
            InputBytes(bytes), scale: 1, x: 0, y: 0, width: 100, height: 100, cancel: nil)
        #expect(region.warnings == 1)
        let clean = try JPEGRegionDecoder.decode(
            Self.input("orientation/Landscape_1.jpg"), scale: 1, x: 0, y: 0, width: 100, height: 100, cancel: nil)
        #expect(clean.warnings == 0)
        #expect(try region.image.pixels() == clean.image.pixels())
    }

    @Test("a set cancellation flag stops the decode before it starts")
    func cancelledBefore() throws {
        let flag = DecodeCancelFlag()
        flag.set()
        #expect(flag.isSet)
        let input = try Self.input("orientation/Landscape_1.jpg")
        do {
            _ = try JPEGRegionDecoder.decode(input, scale: 1, x: 0, y: 0, width: 100, height: 100, cancel: flag)
            Issue.record("decoded despite the flag")
        } catch {
            #expect(error.kind == .cancelled)
        }
    }

    @Test("setting the flag from another thread stops a long decode midway")
    func cancelledMidway() throws {
        let bytes = RenderCancellationTests.large
        #expect(bytes.count > 1_000_000)
        let input = InputBytes(bytes)
        // 4000×4000 at full scale, below 1000 rows of skipped ones: hundreds of milliseconds of work.
        let decode = { (flag: DecodeCancelFlag?) -> JPEGRegionDecoder.Failure.Kind? in
            do throws(JPEGRegionDecoder.Failure) {
                _ = try JPEGRegionDecoder.decode(
                    input, scale: 1, x: 1000, y: 1000, width: 4000, height: 4000, cancel: flag)
                return nil
            } catch {
                return error.kind
            }
        }
        let clock = ContinuousClock()
        let start = clock.now
        #expect(decode(nil) == nil)
        let uncancelled = clock.now - start

        let flag = DecodeCancelFlag()
        let cancelAfter = Double(uncancelled.nanoseconds) / 1e9 / 10
        // Its own thread (Dispatch's pool may be busy with other tests' work).
        Thread {
            Thread.sleep(forTimeInterval: cancelAfter)
            flag.set()
        }.start()
        let cancelledStart = clock.now
        let outcome = decode(flag)
        let cancelled = clock.now - cancelledStart
        #expect(outcome == .cancelled)
        // Stopped well before the end (the flag is polled every 16 rows and every 256 skipped ones).
        #expect(cancelled < uncancelled / 2, "cancelled after \(cancelled) of \(uncancelled)")
    }
}

extension Duration {
    fileprivate var nanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }
}

/// A small deterministic generator (test inputs only).
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func next(below bound: Int) -> Int { bound <= 1 ? 0 : Int(next() % UInt64(bound)) }
}
