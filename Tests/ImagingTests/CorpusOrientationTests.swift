import CropGeometry
import Testing

@testable import Imaging

/// DESIGN §2 step 2 against real files: the nine EXIF orientations of one photo give one avatar.
@Suite("Corpus: orientation", .enabled(if: Corpus.available))
struct CorpusOrientationTests {
    static let landscapes = (0...8).map { "orientation/Landscape_\($0).jpg" }

    func avatars(input: CropInput) throws -> [Raster] {
        try Self.landscapes.map { try decode(render($0, input: input).avatar.data).raster }
    }

    @Test("all nine orientations give the same upright avatar (centred and off-centre crops)")
    func sameAvatar() throws {
        for input in [CropInput.centred, .rect(PixelRect(x: 100, y: 50, side: 700), reference: nil)] {
            let rasters = try avatars(input: input)
            let reference = rasters[1]
            for (index, raster) in rasters.enumerated() {
                let difference = reference.meanAbsoluteDifference(raster)
                #expect(difference < 3, "Landscape_\(index) differs by \(difference) for \(input)")
            }
        }
    }

    @Test("the comparison can fail: a rotated or mirrored avatar differs a lot")
    func wrongOrientationDetected() throws {
        let upright = try decode(render("orientation/Landscape_1.jpg").avatar.data).raster
        #expect(upright.meanAbsoluteDifference(upright.rotatedClockwise()) > 20)
        #expect(upright.meanAbsoluteDifference(upright.mirrored()) > 20)
        // And the stored (unrotated) pixels of an EXIF 6 file are not what is published.
        let header = try renderer().probe(Corpus.bytes("orientation/Landscape_6.jpg"))
        #expect(header.orientation == 6)
        #expect(header.storedSize == PixelSize(width: 1200, height: 1800))
        #expect(header.orientedSize == PixelSize(width: 1800, height: 1200))
    }

    @Test("a portrait phone photo (EXIF 6) is published upright")
    func phonePortrait() throws {
        let result = try render("camera/phone_iphone-4s_8mp_orientation-6.jpg")
        #expect(result.header.orientedSize == PixelSize(width: 2448, height: 3264))
        #expect(result.decodeSize.height > result.decodeSize.width)
    }

    @Test("AVIF without irot or EXIF orientation is not rotated again")
    func avifControl() throws {
        let result = try render("orientation/avif_orientation-6_gps.avif")
        #expect(result.header.format == .heif)
        #expect(result.header.orientation == 1)
        #expect(result.header.orientedSize == PixelSize(width: 3024, height: 4032))
        #expect(result.avatar.size == 512)
    }
}
