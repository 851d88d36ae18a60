import CropGeometry
import Foundation
import Testing

@testable import Imaging

/// docs/ARCHITECTURE.md §2 step 1 and damaged files: every bad input ends in a typed error. The `bad/` files are
/// in the larger corpus (`AVATAR_TEST_CORPUS`); the tests that need them run when it is present.
@Suite("Test photos: bad inputs")
struct CorpusBadInputTests {
    static let expected: [String: ImagingError.Code] = [
        "bad/bomb_20000x20000_1bit-grey.png": .tooManyPixels,
        "bad/corrupt-header_canon-300d.jpg": .decodeFailed,
        "bad/not-an-image_html-404.jpg": .unsupportedFormat,
        "bad/pngsuite_xc1n0g08.png": .decodeFailed,
        "bad/pngsuite_xcrn0g04.png": .unsupportedFormat,
        "bad/pngsuite_xcsn0g01.png": .tooSmall,
        "bad/pngsuite_xd0n2c08.png": .decodeFailed,
        "bad/pngsuite_xdtn0g01.png": .decodeFailed,
        "bad/pngsuite_xhdn0g08.png": .decodeFailed,
        "bad/pngsuite_xs1n0g01.png": .unsupportedFormat,
        "bad/truncated_10000-bytes-of-2725x2225.jpg": .decodeFailed,
        "bad/truncated_575x800.gif": .decodeFailed,
        "bad/truncated_image_640x480.png": .decodeFailed,
        "bad/zero-byte.jpg": .unsupportedFormat,
    ]

    @Test("each bad file fails with its expected code", arguments: Corpus.existing(expected.keys.sorted()))
    func expectedCode(path: String) throws {
        let bytes = try Corpus.bytes(path)
        #expect(throws: ImagingError.self) { try renderer().render(bytes, input: .centred, options: RenderOptions()) }
        do {
            _ = try renderer().render(bytes, input: .centred, options: RenderOptions())
        } catch {
            #expect(error.code == Self.expected[path], "\(path): \(error.debugDescription)")
        }
    }

    @Test("every file in bad/ is either rendered or rejected with a typed error (new files included)")
    func wholeFolder() throws {
        for path in try Corpus.files(in: "bad") {
            let bytes = try Corpus.bytes(path)
            do {
                let result = try renderer(minSide: 1).render(bytes, input: .centred, options: RenderOptions())
                #expect(path.contains("jpeg-data-with-png-extension"), "\(path) rendered")
                #expect(result.avatar.size == 512)
            } catch {
                #expect(
                    error.code != .processingFailed && error.code != .outOfMemory, "\(path): \(error.debugDescription)")
            }
        }
    }

    @Test(
        "the bomb is rejected by the header probe, before any pixel is decoded",
        .enabled(if: Corpus.has("bad/bomb_20000x20000_1bit-grey.png")))
    func bombInProbe() throws {
        let bytes = try Corpus.bytes("bad/bomb_20000x20000_1bit-grey.png")
        #expect(throws: ImagingError.self) { try renderer().probe(bytes) }
        do { _ = try renderer().probe(bytes) } catch { #expect(error.code == .tooManyPixels) }
        // With a pixel limit above its size, the same probe accepts the header (so the limit is what rejects it).
        let lenient = AvatarRenderer(limits: ImageLimits(maxPixels: 400_000_000), logger: testLogger)
        #expect(try lenient.probe(bytes).header.storedSize.width == 20000)
    }

    @Test(
        "damaged pixel data is rejected, not rendered with grey areas (libvips would only warn)",
        .enabled(if: Corpus.has("bad/pngsuite_xcsn0g01.png")))
    func crcDamage() throws {
        // 32×32, so only with the size rule relaxed does the decode get to the damaged IDAT.
        let bytes = try Corpus.bytes("bad/pngsuite_xcsn0g01.png")
        do {
            _ = try renderer(minSide: 1).render(bytes, input: .centred, options: RenderOptions())
            Issue.record("CRC-damaged PNG rendered")
        } catch {
            #expect(error.code == .decodeFailed)
        }
    }

    /// A baseline JPEG cut at 82 % of its bytes: rows near the top decode, rows near the bottom do not.
    /// A crop at the top renders because sequential decoding stops after the crop's last row.
    @Test(
        "decoding stops at the crop's last row: a crop above the damage renders, one below fails",
        arguments: Corpus.roots(holding: "orientation/Landscape_1.jpg"))
    func stopsAtLastRow(root: URL) throws {
        let whole = try Corpus.bytes("orientation/Landscape_1.jpg", in: root)
        let bytes = Array(whole.prefix(whole.count * 82 / 100))
        let header = try renderer().probe(bytes).header
        #expect(header.interlaced == false)
        // 640 px squares (the smallest the quality clamp allows): one at the top, one reaching the bottom
        // ((1000, 560) on the 1800×1200 original, pulled back inside on smaller copies).
        let (width, height) = (header.orientedSize.width, header.orientedSize.height)
        let side = 640
        let top = try renderer().render(
            bytes, input: .rect(PixelRect(x: 0, y: 0, side: Double(side)), reference: nil), options: RenderOptions())
        #expect(top.plan.pixelCrop == PixelCrop(x: 0, y: 0, side: side))
        let bottom = PixelRect(x: Double(width * 5 / 9), y: Double(height * 7 / 15), side: Double(side))
        for input in [CropInput.rect(bottom, reference: nil), .centred] {
            do {
                _ = try renderer().render(bytes, input: input, options: RenderOptions())
                Issue.record("crop over the missing rows rendered: \(input)")
            } catch {
                #expect(error.code == .decodeFailed)
            }
        }
    }

    @Test("the byte limit applies before probing")
    func byteLimit() throws {
        let bytes = try Corpus.bytes("orientation/Landscape_1.jpg")
        let strict = AvatarRenderer(limits: ImageLimits(maxBytes: bytes.count - 1), logger: testLogger)
        do { _ = try strict.probe(bytes) } catch { #expect(error.code == .tooLarge) }
        #expect(throws: ImagingError.self) { try strict.probe(bytes) }
        let exact = AvatarRenderer(limits: ImageLimits(maxBytes: bytes.count), logger: testLogger)
        #expect(try exact.probe(bytes).header.format == .jpeg)
    }

    @Test(
        "JPEG bytes named .png are sniffed and rendered",
        .enabled(if: Corpus.has("bad/jpeg-data-with-png-extension.png")))
    func misnamed() throws {
        let result = try render("bad/jpeg-data-with-png-extension.png")
        #expect(result.header.format == .jpeg)
        #expect(try decode(result.avatar.data).raster.width == 512)
    }

    @Test("untrusted formats are refused even though libvips could read them")
    func untrusted() throws {
        let svg = Array("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"800\" height=\"800\"></svg>".utf8)
        let ppm = Array("P6\n400 400\n255\n".utf8) + Array(repeating: UInt8(128), count: 400 * 400 * 3)
        for bytes in [svg, ppm] {
            do {
                _ = try renderer().probe(bytes)
                Issue.record("untrusted input accepted")
            } catch {
                #expect(error.code == .unsupportedFormat)
            }
        }
    }
}
