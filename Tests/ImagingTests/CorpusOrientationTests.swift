import CropGeometry
import Foundation
import Testing

@testable import Imaging

/// docs/ARCHITECTURE.md §2 step 4 against real files: the nine EXIF orientations of one photo give one avatar.
/// Runs on the fixtures (1350×900) and, when present, on the larger corpus (1800×1200).
@Suite("Test photos: orientation")
struct CorpusOrientationTests {
    static let landscapes = (0...8).map { "orientation/Landscape_\($0).jpg" }

    func avatars(input: CropInput, in root: URL) throws -> [Raster] {
        try Self.landscapes.map { try decode(render($0, input: input, in: root).avatar.data).raster }
    }

    @Test(
        "all nine orientations give the same upright avatar (centred and off-centre crops)",
        arguments: Corpus.roots(holding: "orientation/Landscape_0.jpg", "orientation/Landscape_8.jpg"))
    func sameAvatar(root: URL) throws {
        let size = try renderer().probe(Corpus.bytes("orientation/Landscape_1.jpg", in: root)).header.orientedSize
        // Off-centre: (100, 50, 700) on the 1800×1200 original, the same proportions on smaller copies.
        let offCentre = PixelRect(
            x: Double(size.width / 18), y: Double(size.height / 24), side: Double(size.height * 7 / 12))
        for input in [CropInput.centred, .rect(offCentre, reference: nil)] {
            let rasters = try avatars(input: input, in: root)
            let reference = rasters[1]
            for (index, raster) in rasters.enumerated() {
                let difference = reference.meanAbsoluteDifference(raster)
                // Under 3.5 of 255: the fixtures are each re-encoded once more (a rotated or mirrored
                // avatar differs by more than 20, see below).
                #expect(difference < 3.5, "Landscape_\(index) differs by \(difference) for \(input)")
            }
        }
    }

    @Test(
        "the comparison can fail: a rotated or mirrored avatar differs a lot",
        arguments: Corpus.roots(holding: "orientation/Landscape_1.jpg", "orientation/Landscape_6.jpg"))
    func wrongOrientationDetected(root: URL) throws {
        let upright = try decode(render("orientation/Landscape_1.jpg", in: root).avatar.data).raster
        #expect(upright.meanAbsoluteDifference(upright.rotatedClockwise()) > 20)
        #expect(upright.meanAbsoluteDifference(upright.mirrored()) > 20)
        // And the stored (unrotated) pixels of an EXIF 6 file are not what is published.
        let header = try renderer().probe(Corpus.bytes("orientation/Landscape_6.jpg", in: root)).header
        #expect(header.orientation == 6)
        #expect(header.storedSize.height > header.storedSize.width)
        #expect(
            header.orientedSize == PixelSize(width: header.storedSize.height, height: header.storedSize.width))
        #expect(header.orientedSize.width * 2 == header.orientedSize.height * 3)
    }

    @Test(
        "a portrait phone photo (EXIF 6) is published upright",
        .enabled(if: Corpus.has("camera/phone_iphone-4s_8mp_orientation-6.jpg")))
    func phonePortrait() throws {
        let result = try render("camera/phone_iphone-4s_8mp_orientation-6.jpg")
        #expect(result.header.orientedSize == PixelSize(width: 2448, height: 3264))
        #expect(result.decodeSize.height > result.decodeSize.width)
    }

    @Test(
        "AVIF without irot or EXIF orientation is not rotated again",
        .enabled(if: Corpus.has("orientation/avif_orientation-6_gps.avif")))
    func avifControl() throws {
        let result = try render("orientation/avif_orientation-6_gps.avif")
        #expect(result.header.format == .heif)
        #expect(result.header.orientation == 1)
        #expect(result.header.orientedSize == PixelSize(width: 3024, height: 4032))
        #expect(result.avatar.size == 512)
    }
}
