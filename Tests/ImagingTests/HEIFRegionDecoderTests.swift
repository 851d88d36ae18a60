import CropGeometry
import Foundation
import Testing

@_spi(Benchmark) @testable import Imaging

/// docs/ARCHITECTURE.md §2 step 3: the HEIF region decoder renders the same square as libvips'
/// heifload (libheif decoding the whole image and applying irot/imir itself). Each test renders one
/// request automatically (the HEIF region decoder) and with libvips forced, and compares them with
/// `DecoderEquivalenceTests.expectSame`'s tolerance. One difference is inherent: on a file with
/// `irot`, libheif turns the 4:2:0 planes before it upsamples chroma to RGB, the region decoder after
/// (it turns only the RGB square), so chroma is interpolated along the other axis — a difference of a
/// few levels at sharp colour edges, under 0.5 of 255 on average. Rotated files are compared with
/// `rotatedTolerance`, tighter on average and looser per sample.
///
/// Tests over the larger corpus need `AVATAR_TEST_CORPUS` (the iOS 18 file and the 12 MP grid).
@Suite("HEIF region decoder vs libvips")
struct HEIFRegionDecoderTests {
    /// Every HEIC and AVIF of the test photos (the fixtures, and the larger corpus when present).
    static let heifs: [String] = {
        let folders = ["formats", "orientation", "colour", "camera"]
        return folders.flatMap { (try? Corpus.files(in: $0)) ?? [] }
            .filter { $0.hasSuffix(".heic") || $0.hasSuffix(".avif") }
    }()

    static let fixture = "formats/heic_iphone-7-plus_1008x756.heic"
    static let iOS18 = "formats/heic_iphone-ios18_tmap-gainmap_4284x5712.heic"
    static let example = "formats/heic_iphone-7-plus_Example1.heic"

    /// Mean and per-sample bounds for files whose stored image is turned (see above).
    static let rotatedTolerance = (mean: 1.0, sample: 24)
    static func expectSame(
        _ bytes: [UInt8], input: CropInput, options: RenderOptions = RenderOptions(),
        _ what: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let layout = try? renderer(minSide: 1).probe(bytes).header.heifLayout
        let turned = layout?.orientation.map { $0.rotation != .none } ?? false
        let result = try DecoderEquivalenceTests.expectSame(
            bytes, input: input, options: options, minSide: 1,
            tolerance: turned ? rotatedTolerance.mean : DecoderEquivalenceTests.tolerance,
            sampleTolerance: turned ? rotatedTolerance.sample : DecoderEquivalenceTests.sampleTolerance, what(),
            sourceLocation: sourceLocation)
        #expect(result?.decoder == .heifRegion, "\(what())", sourceLocation: sourceLocation)
    }

    @Test("the HEIF fixtures and corpus files: centred, zoomed, each border and a corner", arguments: heifs)
    func poses(path: String) throws {
        let bytes = try Corpus.bytes(path)
        let header = try renderer(minSide: 1).probe(bytes).header
        #expect(header.decoder == .heifRegion, "\(path): \(header.decoder)")
        let size = header.orientedSize
        let rect = DecoderEquivalenceTests.rect
        var inputs: [CropInput] = [
            .centred,
            .pose(EditorPose(scale: 1000, tx: -200, ty: 150), reference: nil),  // most zoomed in
            rect(size, 0.6, (0, 0.5)),  // left border
            rect(size, 0.6, (0.55, 1)),  // bottom border
        ]
        // 12-24 MP renders are slow in a debug build: the small fixtures take the whole set.
        if size.width * size.height < 4_000_000 {
            inputs += [rect(size, 0.6, (1, 0.4)), rect(size, 0.6, (0.45, 0)), rect(size, 1, (1, 1))]
        }
        for input in inputs {
            try Self.expectSame(bytes, input: input, "\(path) \(input)")
        }
    }

    /// The eight stored orientations as irot/imir, in libheif's order: each EXIF orientation once.
    static let transforms: [(exif: Int, steps: [HEIFEditing.Transform])] = [
        (1, []), (8, [.rotate(1)]), (3, [.rotate(2)]), (6, [.rotate(3)]),
        (2, [.mirror(axis: 1)]), (4, [.mirror(axis: 0)]),
        (7, [.rotate(1), .mirror(axis: 1)]), (5, [.rotate(1), .mirror(axis: 0)]),
    ]

    @Test("every irot/imir: the square is cut in stored orientation and turned upright like libheif does")
    func transformations() throws {
        let original = try Corpus.bytes(Self.fixture)
        for (exif, steps) in Self.transforms {
            let bytes = try HEIFEditing.adding(steps, to: original)
            let header = try renderer(minSide: 1).probe(bytes).header
            #expect(header.heifLayout?.orientation == Orientation(exif: exif), "\(steps)")
            #expect(header.decoder == .heifRegion, "\(steps): \(header.decoder)")
            let size = header.orientedSize
            for input in [
                CropInput.centred, DecoderEquivalenceTests.rect(size, side: 0.55, centre: (0.3, 0.65)),
                DecoderEquivalenceTests.rect(size, side: 0.4, centre: (1, 0)),
            ] {
                try Self.expectSame(bytes, input: input, "\(steps) \(input)")
                // A 64 px avatar box-shrinks by 8 (756 / 8 ≥ 64): 756 is not a multiple of 8, so the
                // boxes start 4 px in along an axis the orientation reverses, as libvips' path has them.
                try Self.expectSame(bytes, input: input, options: Self.small, "\(steps) \(input) at 64 px")
            }
        }
    }

    /// A 64 px avatar (master 64): most poses of the fixture box-shrink by 4 or 8.
    static let small = {
        var options = RenderOptions()
        options.settings.outputSize = 64
        return options
    }()

    @Test("the box shrink as tiles are copied: every pixel vips_shrink's mean of its box, across tile seams")
    func boxShrink() throws {
        // The 12 MP grid of 512 px tiles when the corpus is there, else the fixture (one coded image).
        let path = Corpus.has(Self.example) ? Self.example : Self.fixture
        let input = InputBytes(try Corpus.bytes(path))
        let layout = try HEIFRegionDecoder.layout(of: input, maxPixels: ImageLimits().maxPixels)
        let limit = layout.storedSize.pixelCount
        // (factor, origin, crop in shrunk pixels): boxes split by the seams at 512 and 1024, or not.
        // Only the cases inside the image run: the fixture (1008 × 756) has no room for the first.
        let cases: [(Int, (x: Int, y: Int), PixelCrop)] = [
            (3, (1, 2), PixelCrop(x: 160, y: 150, side: 200)),
            (3, (1, 2), PixelCrop(x: 100, y: 50, side: 150)),
            (8, (0, 0), PixelCrop(x: 20, y: 10, side: 80)),
            (8, (5, 3), PixelCrop(x: 30, y: 40, side: 40)),
            (2, (1, 1), PixelCrop(x: 200, y: 100, side: 150)),
        ].filter { factor, origin, crop in
            origin.x + (crop.x + crop.side) * factor <= layout.storedSize.width
                && origin.y + (crop.y + crop.side) * factor <= layout.storedSize.height
        }
        #expect(cases.count >= 4, "\(path): \(cases.count) cases fit")
        for (factor, origin, crop) in cases {
            let whole = try HEIFRegionDecoder.decode(
                input, maxPixels: limit,
                crop: PixelCrop(x: origin.x + crop.x * factor, y: origin.y + crop.y * factor, side: crop.side * factor),
                thumbnail: false, cancel: nil)
            let shrunk = try HEIFRegionDecoder.decode(
                input, maxPixels: limit, crop: crop, shrink: factor, origin: origin, thumbnail: false, cancel: nil)
            #expect(shrunk.image.width == crop.side && shrunk.image.height == crop.side)
            let (source, pixels) = (try whole.image.pixels(), try shrunk.image.pixels())
            let (side, bands) = (crop.side * factor, whole.image.bands)
            var expected = [UInt8](repeating: 0, count: crop.side * crop.side * bands)
            // vips_shrink's arithmetic: each column's vertical mean, rounded, then their mean, rounded.
            for y in 0..<crop.side {
                for x in 0..<crop.side {
                    for band in 0..<bands {
                        var sum = 0
                        for dx in 0..<factor {
                            var column = 0
                            for dy in 0..<factor {
                                column += Int(source[((y * factor + dy) * side + x * factor + dx) * bands + band])
                            }
                            sum += (column + factor / 2) / factor
                        }
                        expected[(y * crop.side + x) * bands + band] = UInt8((sum + factor / 2) / factor)
                    }
                }
            }
            #expect(pixels == expected, "\(path): factor \(factor) from \(origin) at \(crop)")
        }
        // Boxes reaching past the image are declined, not read out of bounds.
        do {
            let side = min(layout.storedSize.width, layout.storedSize.height) / 4
            _ = try HEIFRegionDecoder.decode(
                input, maxPixels: limit, crop: PixelCrop(x: 0, y: 0, side: side), shrink: 4, origin: (3, 3),
                thumbnail: false, cancel: nil)
            Issue.record("boxes past the image decoded")
        } catch {
            #expect(error.kind == .unsupported)
        }
    }

    @Test(
        "4:2:0 tiles (8, 10, 12 bits; full and limited range) converted to RGB in the decoder, only the region's pixels: libheif's conversion exactly",
        arguments: heifs)
    func conversion(path: String) throws {
        let input = InputBytes(try Corpus.bytes(path))
        let layout = try HEIFRegionDecoder.layout(of: input, maxPixels: ImageLimits().maxPixels)
        let size = layout.storedSize
        let short = min(size.width, size.height)
        // (crop in shrunk pixels, factor, box origin): the whole short side across every seam it
        // crosses; odd starts and ends (a chroma sample's pair split); the far corner; boxes split by seams.
        let cases: [(PixelCrop, Int, (x: Int, y: Int))] = [
            (PixelCrop(x: 0, y: 0, side: short / 4), 4, (0, 0)),
            (PixelCrop(x: 1, y: 3, side: min(short - 4, 701)), 1, (0, 0)),
            (PixelCrop(x: size.width - 255, y: size.height - 255, side: 255), 1, (0, 0)),
            (PixelCrop(x: 7, y: 5, side: (short - 2) / 3 - 8), 3, (1, 2)),
        ]
        for (crop, factor, origin) in cases {
            let what = "\(path): \(crop) factor \(factor) from \(origin)"
            let here = try HEIFRegionDecoder.decode(
                input, maxPixels: size.pixelCount, crop: crop, shrink: factor, origin: origin, thumbnail: false,
                cancel: nil)
            let libheif = try HEIFRegionDecoder.decode(
                input, maxPixels: size.pixelCount, crop: crop, shrink: factor, origin: origin, thumbnail: false,
                libheifConversion: true, cancel: nil)
            if !layout.hasAlpha {
                // Every file here without alpha is 4:2:0, full range if 8-bit, with a matrix of fixed weights:
                // all of it converted here.
                #expect(here.convertedTiles == here.tiles && here.tiles > 0, "\(what)")
            }
            #expect(libheif.convertedTiles == 0, "\(what)")
            #expect(try here.image.pixels() == (try libheif.image.pixels()), "\(what)")
        }
    }

    @Test("tile edges and corners: squares starting and ending at, before and after tile seams")
    func tileSeams() throws {
        guard Corpus.has(Self.example) else { return }
        let bytes = try Corpus.bytes(Self.example)
        let header = try renderer().probe(bytes).header
        let layout = try #require(header.heifLayout)
        #expect(layout.isGrid && layout.tileSize == PixelSize(width: 512, height: 512))
        // 4032 × 3024 in 512 px tiles: seams at multiples of 512.
        let squares: [(Double, Double, Double)] = [
            (512, 512, 512),  // exactly one tile
            (511, 1023, 514),  // one pixel into each neighbour
            (0, 0, 1024),  // the top-left corner, 2 × 2 tiles
            (4032 - 600, 3024 - 600, 600),  // the bottom-right corner, partial tiles
            (1536, 0, 3024),  // the whole height
        ]
        for (x, y, side) in squares {
            let input = CropInput.rect(PixelRect(x: x, y: y, side: side), reference: nil)
            try Self.expectSame(bytes, input: input, "\(Self.example) \(x),\(y) \(side)")
            let crop = PixelCrop(x: Int(x), y: Int(y), side: Int(side))
            let expected =
                ((Int(x) + Int(side) - 1) / 512 - Int(x) / 512 + 1)
                * ((Int(y) + Int(side) - 1) / 512 - Int(y) / 512 + 1)
            #expect(layout.tiles(touching: crop) == expected)
        }
    }

    @Test("the iOS 18 HEIC (grid, irot, tmap gain map) renders upright and correct")
    func iOS18() throws {
        guard Corpus.has(Self.iOS18) else { return }
        let bytes = try Corpus.bytes(Self.iOS18)
        let header = try renderer().probe(bytes).header
        let layout = try #require(header.heifLayout)
        #expect(header.orientedSize == PixelSize(width: 4284, height: 5712))
        #expect(layout.storedSize == PixelSize(width: 5712, height: 4284))
        #expect(layout.orientation == Orientation(exif: 6))
        #expect(layout.columns == 9 && layout.rows == 5)
        let size = header.orientedSize
        for input in [CropInput.centred, DecoderEquivalenceTests.rect(size, side: 0.3, centre: (0.2, 0.8))] {
            try Self.expectSame(bytes, input: input, "\(Self.iOS18) \(input)")
        }
        // Upright: the render of the top of the photo is the top of libheif's upright image.
        let top = DecoderEquivalenceTests.rect(size, side: 0.4, centre: (0.5, 0))
        let result = try renderer().render(bytes, input: top, options: RenderOptions())
        #expect(result.decoder == .heifRegion)
        // A 1 714 px square for a 512 px master: box-shrunk by 2 as the tiles are copied.
        #expect(result.decodeSize == ShrinkOnLoad.boxShrunkSize(size, factor: 2))
    }

    @Test("the memory fallback decodes the thumbnail item only when the crop in it is at least the output size")
    func thumbnailFallback() throws {
        guard Corpus.has(Self.iOS18) else { return }
        let bytes = try Corpus.bytes(Self.iOS18)
        let probed = try renderer().probe(bytes)
        let thumbnail = try #require(probed.header.heifLayout?.thumbnailSize)
        #expect(thumbnail == PixelSize(width: 312, height: 416))
        // A 256 px avatar of the whole width: the crop in the 312 px thumbnail is large enough.
        var small = RenderOptions(forceFallback: true)
        small.settings.outputSize = 256
        let fromThumbnail = try renderer().render(probed, input: .centred, options: small)
        #expect(fromThumbnail.fallbackUsed && fromThumbnail.decoder == .heifRegion)
        #expect(fromThumbnail.decodeSize == thumbnail)
        // The same avatar from the tiles: the thumbnail is the same photo, upright, a little softer.
        small.forceFallback = false
        let fromTiles = try renderer().render(probed, input: .centred, options: small)
        // The 4 284 px square box-shrunk by 8 (4 284 / 8 ≥ the 512 px master).
        let shrunk = ShrinkOnLoad.boxShrunkSize(probed.header.orientedSize, factor: 8)
        #expect(fromTiles.decodeSize == shrunk)
        let difference = try decode(fromThumbnail.avatar.data).raster.meanAbsoluteDifference(
            try decode(fromTiles.avatar.data).raster)
        #expect(difference < 8, "thumbnail vs tiles: \(difference)")
        // At 512 px the thumbnail is too small: the fallback decodes the tiles, shrunk as without it.
        let full = try renderer().render(probed, input: .centred, options: RenderOptions(forceFallback: true))
        #expect(full.fallbackUsed && full.decodeSize == shrunk)
    }

    @Test("a cancelled render stops before the first tile")
    func cancellation() throws {
        let bytes = try Corpus.bytes(Self.fixture)
        let probed = try renderer().probe(bytes)
        let cancellation = RenderCancellation()
        cancellation.cancel()
        #expect(throws: ImagingError.self) {
            try renderer().render(probed, input: .centred, options: RenderOptions(), cancellation: cancellation)
        }
        let flag = DecodeCancelFlag()
        flag.set()
        let input = InputBytes(bytes)
        do {
            _ = try HEIFRegionDecoder.decode(
                input, maxPixels: 1_000_000, crop: PixelCrop(x: 0, y: 0, side: 700), thumbnail: false, cancel: flag)
            Issue.record("a cancelled decode returned pixels")
        } catch {
            #expect(error.kind == .cancelled)
        }
    }

    @Test("hostile HEIF/AVIF files fail in the layout, before any decode")
    func hostile() throws {
        let files = [
            "avif_declares-17000x17000.avif", "avif_ispe-overflow_4294967295x4294967295.avif",
            "avif_ipma-entry-count-past-end.avif",
        ]
        for name in files {
            let bytes = try Corpus.bytes("hostile/\(name)")
            do {
                _ = try HEIFRegionDecoder.layout(of: InputBytes(bytes), maxPixels: ImageLimits().maxPixels)
                Issue.record("\(name): libheif laid it out")
            } catch {
                #expect(error.kind == .limit || error.kind == .corrupt, "\(name): \(error)")
            }
            // The renderer refuses it before libheif sees it (the container checks run first).
            #expect(throws: ImagingError.self) { try renderer().probe(bytes) }
        }
        // A region outside the image is declined, not read out of bounds.
        let input = InputBytes(try Corpus.bytes(Self.fixture))
        do {
            _ = try HEIFRegionDecoder.decode(
                input, maxPixels: 1_000_000, crop: PixelCrop(x: 900, y: 0, side: 700), thumbnail: false, cancel: nil)
            Issue.record("a region outside the image decoded")
        } catch {
            #expect(error.kind == .unsupported)
        }
        // A tile larger than the limit is refused before it is decoded.
        do {
            _ = try HEIFRegionDecoder.layout(of: input, maxPixels: 1000)
            Issue.record("a 1008 × 756 image passed a 1000-pixel limit")
        } catch {
            #expect(error.kind == .limit)
        }
    }

    /// docs/UPSTREAM-BUGS.md: libheif 1.19.7's tile API dereferences NULL when a grid's tile item is not an
    /// image (its whole-image decode refuses the same file cleanly). Every tile item is checked when the
    /// file is opened, so this file never reaches the tile API: a clean error, then `DECODE_FAILED`.
    @Test("a grid whose tile item is not an image fails when opened, before libheif's tile API can crash on it")
    func tileNotAnImage() throws {
        let bytes = try Corpus.bytes("hostile/heic_grid-tile-not-an-image.heic")
        let input = InputBytes(bytes)
        do {
            _ = try HEIFRegionDecoder.layout(of: input, maxPixels: ImageLimits().maxPixels)
            Issue.record("a grid with a tile that is not an image was laid out")
        } catch {
            #expect(error.kind == .corrupt)
            #expect(error.message == "grid tile (1, 1): item 5 is not an image", "\(error.message)")
        }
        // Every tile the region decoder could be asked for: the same refusal, no tile decoded.
        for crop in [PixelCrop(x: 0, y: 0, side: 100), PixelCrop(x: 300, y: 250, side: 150)] {
            do {
                _ = try HEIFRegionDecoder.decode(
                    input, maxPixels: ImageLimits().maxPixels, crop: crop, thumbnail: false, cancel: nil)
                Issue.record("\(crop) decoded")
            } catch {
                #expect(error.kind == .corrupt)
            }
        }
        // The renderer falls back to libvips, whose whole-image decode libheif refuses cleanly.
        let error = try #require(HostileInputTests.outcome(bytes))
        #expect(error.code == .decodeFailed, "\(error.debugDescription)")
    }

    @Test("nclx stands for an ICC profile unless it is sRGB or undescribed")
    func nclx() throws {
        let p3: [Float] = [0.68, 0.32, 0.265, 0.69, 0.15, 0.06, 0.3127, 0.329]
        let profile = try #require(NCLXProfile.profile(primaries: 12, transfer: 13, chromaticities: p3))
        #expect(Array(profile[36..<40]) == Array("acsp".utf8))
        #expect(Array(profile[16..<20]) == Array("RGB ".utf8))
        let bt709: [Float] = [0.64, 0.33, 0.3, 0.6, 0.15, 0.06, 0.3127, 0.329]
        #expect(NCLXProfile.profile(primaries: 1, transfer: 13, chromaticities: bt709) == nil)
        #expect(NCLXProfile.profile(primaries: 1, transfer: 16, chromaticities: bt709) == nil)  // PQ
        #expect(NCLXProfile.profile(primaries: 2, transfer: 13, chromaticities: bt709) == nil)
    }

    @Test("orientation steps compose as libheif applies irot then imir")
    func orientationSteps() {
        #expect(Orientation.upright.followed(by: .anticlockwise90) == Orientation(exif: 8))
        #expect(Orientation(exif: 8).followed(by: .anticlockwise90) == Orientation(exif: 3))
        #expect(Orientation(exif: 3).followed(by: .anticlockwise90) == Orientation(exif: 6))
        #expect(Orientation(exif: 6).followed(by: .anticlockwise90) == Orientation.upright)
        #expect(Orientation.upright.followed(by: .mirrorLeftRight) == Orientation(exif: 2))
        #expect(Orientation.upright.followed(by: .mirrorTopBottom) == Orientation(exif: 4))
        #expect(Orientation(exif: 8).followed(by: .mirrorLeftRight) == Orientation(exif: 7))
        #expect(Orientation(exif: 8).followed(by: .mirrorTopBottom) == Orientation(exif: 5))
    }

    @Test("memory: the region decoder's estimate holds a tile and the square, not the whole frame")
    func memory() {
        let layout = HEIFRegionDecoder.Layout(
            storedSize: PixelSize(width: 5712, height: 4284), displaySize: PixelSize(width: 4284, height: 5712),
            orientation: Orientation(exif: 6), columns: 9, rows: 5, tileSize: PixelSize(width: 640, height: 896),
            bitDepth: 8, hasAlpha: false, thumbnailSize: PixelSize(width: 312, height: 416))
        func header(_ decoder: DecoderPath) -> ImageHeader {
            ImageHeader(
                format: .heif, storedSize: layout.displaySize, orientation: 1, bands: 3, hasAlpha: false, bitDepth: 8,
                interpretation: "srgb", hasICCProfile: true, byteCount: 3_000_000, decoder: decoder,
                heifLayout: decoder == .heifRegion ? layout : nil)
        }
        let pose = CropInput.pose(EditorPose(scale: 1000, tx: 0, ty: 0), reference: nil)
        let region = MemoryAdmission.estimate(
            header: header(.heifRegion), options: RenderOptions(), input: pose, threads: 1)
        let whole = MemoryAdmission.estimate(
            header: header(.libvips(.header)), options: RenderOptions(), input: pose, threads: 1)
        #expect(region.fullResolution * 3 <= whole.fullResolution)
        // The centred crop (the whole 4 284 px short side) is box-shrunk by 8: far under a third.
        let centred = MemoryAdmission.estimate(
            header: header(.heifRegion), options: RenderOptions(), input: .centred, threads: 1)
        let wholeCentred = MemoryAdmission.estimate(
            header: header(.libvips(.header)), options: RenderOptions(), input: .centred, threads: 1)
        #expect(centred.fullResolution * 3 <= wholeCentred.fullResolution)
        #expect(centred.fullResolution < 4284 * 4284 * 3, "not even the full-resolution square alone")
        // Any pose: the square may be the whole short side, still less than libvips' whole frame.
        let any = MemoryAdmission.estimate(
            header: header(.heifRegion), options: RenderOptions(), input: nil, threads: 1)
        #expect(any.fullResolution >= region.fullResolution && any.fullResolution < whole.fullResolution)
        // The thumbnail (312 × 416) is smaller than the output: the fallback decodes the tiles.
        #expect(region.fallback == region.fullResolution)

        // A 20 MP 10-bit AVIF is one coded image, decoded whole: its centred render's peak (bench/RESULTS.md, "HEIC
        // against its JPEG twin") is mostly dav1d's (its picture, and on two cores a coefficient buffer of 6 bytes a
        // pixel) and libheif's copy of the picture.
        let avif = HEIFRegionDecoder.Layout(
            storedSize: PixelSize(width: 5472, height: 3648), displaySize: PixelSize(width: 5472, height: 3648),
            orientation: Orientation(exif: 1), columns: 1, rows: 1, tileSize: PixelSize(width: 5472, height: 3648),
            bitDepth: 10, hasAlpha: false, thumbnailSize: nil)
        let avifHeader = ImageHeader(
            format: .heif, storedSize: avif.displaySize, orientation: 1, bands: 3, hasAlpha: false, bitDepth: 10,
            interpretation: "rgb16", hasICCProfile: false, byteCount: 1_959_437, decoder: .heifRegion,
            heifLayout: avif)
        let avifCentred = MemoryAdmission.estimate(
            header: avifHeader, options: RenderOptions(), input: .centred, threads: 1)
        #expect(avifCentred.fullResolution >= 310 << 20)
    }
}
