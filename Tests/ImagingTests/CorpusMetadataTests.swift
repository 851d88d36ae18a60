import CropGeometry
import Testing

@testable import Imaging

/// docs/ARCHITECTURE.md §2 step 7: nothing private leaves. Only the sRGB profile (and PNG's pHYs) survive.
@Suite("Test photos: metadata stripping")
struct CorpusMetadataTests {
    static let sources = Corpus.existing([
        "camera/phone_samsung-galaxy-s7-edge_12mp_gps.jpg", "camera/phone_iphone-6-plus_8mp_gps.jpg",
        "metadata/gps_nikon-coolpix-p6000_DSCN0010.jpg", "metadata/huge-xmp_extended-1.5mb_craft-beer.jpg",
        "formats/tiff_icc-xmp-iptc-photoshop_728x825.tif", "colour/adobergb_canon-t6_xmp_test.jpg",
        "colour/cmyk_swop-profile_channel.jpg", "formats/heic_iphone-7-plus_Example1.heic",
        "orientation/avif_orientation-6_gps.avif", "size/craft-beer_960x640.webp",
        "formats/heic_iphone-7-plus_1008x756.heic", "orientation/Landscape_6.jpg",
        "colour/p3_displayp3-v4_craft-beer.jpg",
    ])

    static let privateFields = ["exif-data", "xmp-data", "iptc-data", "ipct-data", "orientation", "gps"]
    /// Byte patterns of EXIF, XMP, IPTC/Photoshop and GPS blocks.
    static let privateMarkers = ["Exif\0\0", "http://ns.adobe.com", "xmpmeta", "Photoshop 3.0", "8BIM", "GPSInfo"]

    @Test("no EXIF, GPS, XMP, IPTC or comments in any output", arguments: sources)
    func stripped(path: String) throws {
        for format in AvatarFormat.allCases {
            let result = try render(path, options: RenderOptions(format: format, extraSizes: [80]))
            for rendition in [result.avatar] + result.extras {
                let output = try decode(rendition.data)
                let leaked = output.fields.filter { field in
                    Self.privateFields.contains(field) || field.hasPrefix("exif-") || field.hasPrefix("png-comment")
                        || field.hasPrefix("jpeg-comment")
                }
                #expect(leaked.isEmpty, "\(path) \(format): \(leaked)")
                for marker in Self.privateMarkers {
                    #expect(!contains(rendition.data, marker), "\(path) \(format) contains \(marker)")
                }
                #expect(output.iccProfile.flatMap(iccDescription)?.contains("sRGB") == true)
            }
        }
    }

    @Test("the check can fail: the sources do carry the metadata")
    func sourcesCarryMetadata() throws {
        let heic = try Corpus.bytes("formats/heic_iphone-7-plus_1008x756.heic")
        #expect(contains(heic, "http://ns.adobe.com"))
        #expect(try decode(heic).fields.contains("exif-data"))
        #expect(try decode(Corpus.bytes("orientation/Landscape_6.jpg")).fields.contains("exif-data"))
        guard Corpus.has("metadata/gps_nikon-coolpix-p6000_DSCN0010.jpg") else { return }
        let gps = try Corpus.bytes("metadata/gps_nikon-coolpix-p6000_DSCN0010.jpg")
        #expect(contains(gps, "Exif\0\0"))
        #expect(try decode(gps).fields.contains("exif-data"))
        let xmp = try Corpus.bytes("metadata/huge-xmp_extended-1.5mb_craft-beer.jpg")
        #expect(contains(xmp, "http://ns.adobe.com"))
    }
}
