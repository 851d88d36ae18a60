import CropGeometry
import Testing

@testable import Imaging

/// docs/ARCHITECTURE.md §2 step 5 against real files.
@Suite("Test photos: colour and alpha")
struct CorpusColourTests {
    static let colourSources = Corpus.existing([
        "colour/p3_displayp3-v4_craft-beer.jpg", "colour/adobergb_canon-t6_xmp_test.jpg",
        "colour/prophoto_16bit_craft-beer.png", "colour/cmyk_swop-profile_channel.jpg",
        "colour/cmyk_no-profile_channel.jpg", "colour/grey-gamma22_craft-beer.jpg", "colour/grey_cd1.1_531x373.jpg",
        "formats/tiff_icc-xmp-iptc-photoshop_728x825.tif", "formats/heic_iphone-7-plus_Example1.heic",
        "colour/rgba_blackbug_2048x1536.png", "colour/palette-trns_flag-nl_900x600.png",
        "formats/heic_iphone-7-plus_1008x756.heic",
    ])

    @Test("every colour source becomes 3-band 8-bit sRGB with an embedded sRGB profile", arguments: colourSources)
    func srgbOutput(path: String) throws {
        for format in AvatarFormat.allCases {
            let result = try render(path, options: RenderOptions(format: format))
            let output = try decode(result.avatar.data)
            #expect(output.raster.width == 512 && output.raster.height == 512)
            #expect(output.raster.bands == 3)
            #expect(output.bitDepth == 8)
            #expect(output.interpretation == "srgb")
            let profile = try #require(output.iccProfile, "\(path) as \(format) has no ICC profile")
            #expect(iccDescription(profile)?.contains("sRGB") == true)
        }
    }

    @Test("the source headers are what the tests assume")
    func headers() throws {
        let cmyk = try renderer().probe(Corpus.bytes("colour/cmyk_no-profile_channel.jpg")).header
        #expect(cmyk.interpretation == "cmyk" && cmyk.bands == 4 && !cmyk.hasICCProfile)
        let p3 = try renderer().probe(Corpus.bytes("colour/p3_displayp3-v4_craft-beer.jpg")).header
        #expect(p3.hasICCProfile && p3.bands == 3)
        let grey = try renderer().probe(Corpus.bytes("colour/grey_cd1.1_531x373.jpg")).header
        #expect(grey.bands == 1 && grey.interpretation == "b-w")
        guard Corpus.has("colour/prophoto_16bit_craft-beer.png", "camera/pd_craft-beer_24mp_progressive.jpg") else {
            return
        }
        let prophoto = try renderer().probe(Corpus.bytes("colour/prophoto_16bit_craft-beer.png")).header
        #expect(prophoto.bitDepth == 16 && prophoto.hasICCProfile)
        let progressive = try renderer().probe(Corpus.bytes("camera/pd_craft-beer_24mp_progressive.jpg")).header
        #expect(progressive.interlaced)
    }

    /// The P3 and ProPhoto files are the same scene as the sRGB 24 MP original: colour-managed, their
    /// avatars match it; with the profile dropped (pixels read as sRGB) they do not.
    @Test(
        "wide-gamut sources match the sRGB original only when colour-managed",
        .enabled(
            if: Corpus.has(
                "camera/pd_craft-beer_24mp_progressive.jpg", "colour/prophoto_16bit_craft-beer.png",
                "colour/p3_displayp3-v4_craft-beer.jpg")))
    func wideGamut() throws {
        let original = try decode(render("camera/pd_craft-beer_24mp_progressive.jpg").avatar.data).raster
        let cases: [(String, ([UInt8]) -> [UInt8])] = [
            ("colour/p3_displayp3-v4_craft-beer.jpg", ProfileRemoval.jpeg),
            ("colour/prophoto_16bit_craft-beer.png", ProfileRemoval.png),
        ]
        for (path, removeProfile) in cases {
            let managed = try decode(render(path).avatar.data).raster
            let naiveBytes = removeProfile(try Corpus.bytes(path))
            let naiveHeader = try renderer().probe(naiveBytes).header
            #expect(!naiveHeader.hasICCProfile)
            let naive = try decode(
                renderer().render(naiveBytes, input: .centred, options: RenderOptions()).avatar.data
            ).raster
            let managedColour = original.meanColourDifference(managed)
            let managedLayout = original.blockMeans(blocks: 32).meanAbsoluteDifference(managed.blockMeans(blocks: 32))
            #expect(managedColour < 1, "\(path): mean colour differs by \(managedColour)")
            #expect(managedLayout < 1.5, "\(path): 32×32 blocks differ by \(managedLayout)")
            let naiveColour = original.meanColourDifference(naive)
            let naiveLayout = original.blockMeans(blocks: 32).meanAbsoluteDifference(naive.blockMeans(blocks: 32))
            #expect(naiveColour > managedColour + 1, "\(path): naive mean colour differs by only \(naiveColour)")
            #expect(naiveLayout > managedLayout + 0.5, "\(path): naive blocks differ by only \(naiveLayout)")
        }
    }

    @Test("grey sources come out grey")
    func grey() throws {
        for path in Corpus.existing(["colour/grey-gamma22_craft-beer.jpg", "colour/grey_cd1.1_531x373.jpg"]) {
            let raster = try decode(render(path).avatar.data).raster
            var worst = 0
            for index in stride(from: 0, to: raster.pixels.count, by: 3) {
                let (r, g, b) = (
                    Int(raster.pixels[index]), Int(raster.pixels[index + 1]), Int(raster.pixels[index + 2])
                )
                worst = max(worst, abs(r - g), abs(g - b))
            }
            #expect(worst <= 2, "\(path): channels differ by up to \(worst)")
        }
    }

    @Test("CMYK with and without a profile both convert (not inverted, similar colours)")
    func cmyk() throws {
        let withProfile = try decode(render("colour/cmyk_swop-profile_channel.jpg").avatar.data).raster
        let without = try decode(render("colour/cmyk_no-profile_channel.jpg").avatar.data).raster
        #expect(withProfile.meanAbsoluteDifference(without) < 20)
        // The scene is a park in daylight: mostly green, not the inverted magenta of raw CMYK.
        #expect(withProfile.mean(band: 1) > withProfile.mean(band: 0) - 10)
        #expect(withProfile.mean(band: 0) + withProfile.mean(band: 1) + withProfile.mean(band: 2) > 3 * 60)
    }

    static let alphaSources = Corpus.existing([
        "colour/rgba_blackbug_2048x1536.png", "colour/palette-trns_flag-nl_900x600.png",
        "formats/webp_alpha_5_webp_a_300x300.webp",
    ])

    @Test("transparent areas take the background colour", arguments: alphaSources)
    func flattened(path: String) throws {
        let header = try renderer(minSide: 1).probe(Corpus.bytes(path)).header
        #expect(header.hasAlpha)
        let white = try decode(render(path, minSide: 1).avatar.data).raster
        let black = try decode(
            render(path, options: RenderOptions(background: RGBColor(r: 0, g: 0, b: 0)), minSide: 1).avatar.data
        ).raster
        #expect(white.bands == 3 && black.bands == 3)
        #expect(white.meanAbsoluteDifference(black) > 10, "\(path): background made no difference")
    }

    @Test("mostly transparent RGBA: corners are exactly the background")
    func blackbugCorners() throws {
        let white = try decode(render("colour/rgba_blackbug_2048x1536.png").avatar.data).raster
        let red = try decode(
            render(
                "colour/rgba_blackbug_2048x1536.png", options: RenderOptions(background: RGBColor(r: 255, g: 0, b: 0))
            )
            .avatar.data
        ).raster
        for (x, y) in [(0, 0), (511, 0), (0, 511), (511, 511)] {
            #expect((0..<3).map { white[x, y, $0] } == [255, 255, 255])
            #expect((0..<3).map { red[x, y, $0] } == [255, 0, 0])
        }
    }

    @Test("palette PNG with tRNS: stripes keep their colours, lightened by the white background")
    func paletteFlag() throws {
        let raster = try decode(render("colour/palette-trns_flag-nl_900x600.png").avatar.data).raster
        let top = (0..<3).map { Int(raster[256, 40, $0]) }
        let middle = (0..<3).map { Int(raster[256, 256, $0]) }
        let bottom = (0..<3).map { Int(raster[256, 470, $0]) }
        #expect(top[0] > top[1] + 20 && top[0] > top[2] + 20)  // red
        #expect(middle.allSatisfy { $0 > 240 })  // white
        #expect(bottom[2] > bottom[0] + 20)  // blue
        #expect(top[1] > 40)  // semi-transparent: lighter than the flag's opaque red (G = 28)
    }
}
