import CropGeometry
import Foundation
import Testing

@_spi(Benchmark) @testable import Imaging

/// docs/ARCHITECTURE.md §2 step 3: the JPEG region decoder renders the same square as libvips' loader. Every test
/// renders one request twice — automatic (the region decoder where `DecoderSelection` allows it) and
/// with libvips forced — and compares the outcomes: the same error code, or avatars within the
/// tolerance the orientation golden test uses (mean absolute difference under 3.5 of 255) and no
/// sample more than 2 apart. Both decoders are libjpeg at the same scale, so the avatars are in fact
/// identical; the per-sample bound catches a crop off by a pixel, which the mean alone could miss.
@Suite("JPEG region decoder vs libvips")
struct DecoderEquivalenceTests {
    /// CorpusOrientationTests' tolerance for "the same avatar".
    static let tolerance = 3.5
    /// The largest difference of one sample.
    static let sampleTolerance = 2

    /// Every JPEG of the test photos (the fixtures, and the larger corpus when present).
    static let jpegs: [String] = {
        let folders = ["orientation", "colour", "size", "formats", "camera", "panorama", "metadata"]
        return folders.flatMap { (try? Corpus.files(in: $0)) ?? [] }.filter { $0.hasSuffix(".jpg") }
    }()

    struct Comparison {
        var region: Result<RenderResult, ImagingError>
        var libvips: Result<RenderResult, ImagingError>
    }

    static func outcome(_ bytes: [UInt8], input: CropInput, options: RenderOptions, minSide: Int = 320)
        -> Result<RenderResult, ImagingError>
    {
        do {
            return .success(try renderer(minSide: minSide).render(bytes, input: input, options: options))
        } catch {
            return .failure(error)
        }
    }

    /// Renders on both decoders and checks they agree; returns the automatic render, if it rendered.
    @discardableResult
    static func expectSame(
        _ bytes: [UInt8], input: CropInput, options: RenderOptions = RenderOptions(), minSide: Int = 320,
        tolerance: Double = tolerance, sampleTolerance: Int = sampleTolerance,
        _ what: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> RenderResult? {
        var forced = options
        forced.decoderPreference = .libvips
        let automatic = outcome(bytes, input: input, options: options, minSide: minSide)
        let libvips = outcome(bytes, input: input, options: forced, minSide: minSide)
        switch (automatic, libvips) {
        case (.failure(let a), .failure(let b)):
            #expect(
                a.code == b.code, "\(what()): \(a.debugDescription) vs \(b.debugDescription)",
                sourceLocation: sourceLocation)
            return nil
        case (.success(let a), .success(let b)):
            #expect(a.plan.pixelCrop == b.plan.pixelCrop, sourceLocation: sourceLocation)
            #expect(a.decodeSize == b.decodeSize && a.shrinkFactor == b.shrinkFactor, sourceLocation: sourceLocation)
            #expect(!b.decoder.isRegion, sourceLocation: sourceLocation)
            for (x, y) in zip([a.avatar] + a.extras, [b.avatar] + b.extras) {
                let (rx, ry) = (try decode(x.data).raster, try decode(y.data).raster)
                let difference = rx.meanAbsoluteDifference(ry)
                let largest = zip(rx.pixels, ry.pixels).map { abs(Int($0) - Int($1)) }.max() ?? 0
                #expect(
                    difference < tolerance && largest <= sampleTolerance,
                    "\(what()) (\(a.decoder)): differs by \(difference) on average, \(largest) at most",
                    sourceLocation: sourceLocation)
            }
            return a
        case (.success(let a), .failure(let b)), (.failure(let b), .success(let a)):
            Issue.record(
                "\(what()): one decoder rendered (\(a.decoder)), the other failed: \(b.debugDescription)",
                sourceLocation: sourceLocation)
            return nil
        }
    }

    /// A square of `fraction` of the short side with its centre at fractions of width and height
    /// (pulled inside the image).
    static func rect(_ size: PixelSize, side fraction: Double, centre: (Double, Double)) -> CropInput {
        let side = (Double(min(size.width, size.height)) * fraction).rounded(.down)
        let x = min(max(0, Double(size.width) * centre.0 - side / 2), Double(size.width) - side)
        let y = min(max(0, Double(size.height) * centre.1 - side / 2), Double(size.height) - side)
        return .rect(PixelRect(x: x.rounded(.down), y: y.rounded(.down), side: side), reference: nil)
    }

    @Test("every JPEG in all eight orientations: centred and off-centre", arguments: jpegs)
    func orientations(path: String) throws {
        let original = try Corpus.bytes(path)
        for orientation in 1...8 {
            let bytes = JPEGEditing.withOrientation(original, orientation)
            guard let size = try? renderer(minSide: 1).probe(bytes).header.orientedSize else {
                try Self.expectSame(bytes, input: .centred, "\(path) orientation \(orientation)")
                continue
            }
            #expect(try renderer(minSide: 1).probe(bytes).header.orientation == orientation)
            // The corpus' camera photos (over 4 MP) only off-centre, where the orientation's mapping
            // matters most: 8-24 MP renders are slow in a debug build.
            let offCentre = Self.rect(size, side: 0.55, centre: (0.3, 0.65))
            let inputs = size.width * size.height > 4_000_000 ? [offCentre] : [CropInput.centred, offCentre]
            for input in inputs {
                try Self.expectSame(bytes, input: input, "\(path) orientation \(orientation) \(input)")
            }
        }
    }

    @Test("poses: zoomed in off-centre and touching each border", arguments: jpegs)
    func poses(path: String) throws {
        let bytes = try Corpus.bytes(path)
        guard let header = try? renderer().probe(bytes).header else {
            try Self.expectSame(bytes, input: .centred, "\(path) (refused)")
            return
        }
        let size = header.orientedSize
        var inputs: [CropInput] = [
            // The most zoomed-in pose the clamps allow, towards the top right.
            .pose(EditorPose(scale: 1000, tx: -200, ty: 150), reference: nil),
            Self.rect(size, side: 0.6, centre: (0, 0.5)),  // left border
            Self.rect(size, side: 0.6, centre: (1, 0.4)),  // right border
            Self.rect(size, side: 0.6, centre: (0.45, 0)),  // top border
            Self.rect(size, side: 0.6, centre: (0.55, 1)),  // bottom border
            Self.rect(size, side: 1, centre: (1, 1)),  // the whole short side, bottom right corner
        ]
        inputs.append(.pose(EditorPose(scale: 1000, tx: 10_000, ty: -10_000), reference: nil))  // a corner
        for input in inputs {
            let result = try Self.expectSame(bytes, input: input, "\(path) \(input)")
            if let result, header.decoder == .jpegRegion {
                #expect(result.decoder == .jpegRegion, "\(path) \(input)")
            }
        }
    }

    @Test("crops decoded at shrink 1, 2, 4 and 8 (the output size picks the scale)", arguments: jpegs)
    func shrinkFactors(path: String) throws {
        let bytes = try Corpus.bytes(path)
        guard let header = try? renderer().probe(bytes).header else { return }
        let size = header.orientedSize
        let side = Double(min(size.width, size.height)) * 0.8
        for factor in [1, 2, 4, 8] {
            // The largest factor f with side / f ≥ output: output just above side / 2f. At 1/1 the
            // quality clamp (a crop of at least 1.25 × output) must hold too.
            let output = factor == 1 ? Int(side / 1.5) : Int(side / Double(factor))
            let options = RenderOptions(settings: EditorSettings(outputSize: output))
            let input = Self.rect(size, side: 0.8, centre: (0.6, 0.45))
            let result = try Self.expectSame(bytes, input: input, options: options, "\(path) 1/\(factor)")
            if let result, header.format == .jpeg {
                #expect(result.shrinkFactor == factor, "\(path): output \(output) decoded at 1/\(result.shrinkFactor)")
            }
        }
    }

    @Test("the memory fallback (thumbnail resolution) decodes the same square too", arguments: jpegs)
    func fallback(path: String) throws {
        let bytes = try Corpus.bytes(path)
        guard let size = try? renderer().probe(bytes).header.orientedSize else { return }
        let options = RenderOptions(forceFallback: true)
        for input in [CropInput.centred, Self.rect(size, side: 0.3, centre: (0.7, 0.3))] {
            let result = try Self.expectSame(bytes, input: input, options: options, "\(path) fallback \(input)")
            #expect(result?.fallbackUsed != false)
        }
    }

    @Test("extra sizes and BlurHash from a region decode match libvips'")
    func extras() throws {
        let bytes = try Corpus.bytes("orientation/Landscape_6.jpg")
        let options = RenderOptions(extraSizes: [80, 1024], blurHash: true)
        let result = try #require(try Self.expectSame(bytes, input: .centred, options: options, "extras"))
        #expect(result.decoder == .jpegRegion)
        #expect(result.extras.map(\.size) == [80, 1024])
    }

    // MARK: - Damaged data

    @Test("cut-off JPEGs fail (or render) alike on both decoders")
    func truncated() throws {
        for path in [
            "orientation/Landscape_1.jpg", "orientation/Landscape_6.jpg", "colour/p3_displayp3-v4_craft-beer.jpg",
        ] {
            let whole = try Corpus.bytes(path)
            let size = try renderer().probe(whole).header.orientedSize
            for fraction in [0.1, 1.0 / 3, 0.82, 0.97] {
                let bytes = Array(whole.prefix(Int(Double(whole.count) * fraction)))
                for input in [CropInput.centred, Self.rect(size, side: 0.5, centre: (0.25, 0.25))] {
                    try Self.expectSame(bytes, input: input, "\(path) cut at \(fraction) \(input)")
                }
            }
        }
    }

    @Test("a crop over missing rows is decode_failed on both decoders; one above them renders on both")
    func damageBelowTheCrop() throws {
        let whole = try Corpus.bytes("orientation/Landscape_1.jpg")
        let bytes = Array(whole.prefix(whole.count * 82 / 100))
        let size = try renderer().probe(bytes).header.orientedSize
        let top = try Self.expectSame(
            bytes, input: .rect(PixelRect(x: 0, y: 0, side: 640), reference: nil), "top crop of a cut file")
        #expect(top?.decoder == .jpegRegion)
        let bottom = PixelRect(x: Double(size.width - 640), y: Double(size.height - 640), side: 640)
        for options in [
            RenderOptions(),
            {
                var forced = RenderOptions(); forced.decoderPreference = .libvips; return forced
            }(),
        ] {
            do {
                _ = try renderer().render(bytes, input: .rect(bottom, reference: nil), options: options)
                Issue.record("a crop over the missing rows rendered (\(options.decoderPreference))")
            } catch {
                #expect(error.code == .decodeFailed)
            }
        }
    }

    @Test("the damaged and hostile JPEGs get the same code from both decoders")
    func damaged() throws {
        var files: [(String, [UInt8])] = try Hostile.names().filter { $0.hasSuffix(".jpg") }.map {
            ("hostile/\($0)", try Hostile.bytes($0))
        }
        for path in (try? Corpus.files(in: "bad")) ?? [] where path.hasSuffix(".jpg") {
            files.append((path, try Corpus.bytes(path)))
        }
        let photo = try Corpus.bytes("orientation/Landscape_1.jpg")
        files.append(("extraneous bytes before a marker", JPEGEditing.withExtraneousBytes(photo)))
        #expect(files.count >= 4)
        for (name, bytes) in files {
            try Self.expectSame(bytes, input: .centred, minSide: 1, name)
        }
        // The tolerated warning does not stop the region decoder.
        let warned = try renderer().render(
            JPEGEditing.withExtraneousBytes(photo), input: .centred, options: RenderOptions())
        #expect(warned.decoder == .jpegRegion)
    }

    // MARK: - Which decoder runs

    @Test("the decoder each kind of file gets, as RenderResult reports it")
    func reported() throws {
        let cases: [(String, DecoderPath)] = [
            ("orientation/Landscape_1.jpg", .jpegRegion),
            ("orientation/Landscape_8.jpg", .jpegRegion),
            ("colour/grey_cd1.1_531x373.jpg", .jpegRegion),
            ("colour/p3_displayp3-v4_craft-beer.jpg", .jpegRegion),
            ("formats/jpeg_progressive_landscape-1_1350x900.jpg", .libvips(.multiScan)),
            ("colour/cmyk_swop-profile_channel.jpg", .libvips(.cmyk)),
            ("colour/cmyk_no-profile_channel.jpg", .libvips(.cmyk)),
            ("colour/rgba_blackbug_2048x1536.png", .libvips(.notJPEG)),
            ("formats/webp_lossy_gallery-4_1024x772.webp", .libvips(.notJPEG)),
            ("formats/heic_iphone-7-plus_1008x756.heic", .heifRegion),
        ]
        for (path, expected) in cases {
            let result = try render(path, minSide: 1)
            #expect(result.decoder == expected, "\(path): \(result.decoder)")
            #expect(result.header.decoder == expected, "\(path): header says \(result.header.decoder)")
        }
        var forced = RenderOptions()
        forced.decoderPreference = .libvips
        #expect(try render("orientation/Landscape_1.jpg", options: forced).decoder == .libvips(.requested))
        #expect(try render("formats/heic_iphone-7-plus_1008x756.heic", options: forced).decoder == .libvips(.requested))
        #expect(try render("formats/webp_lossy_gallery-4_1024x772.webp", options: forced).decoder == .libvips(.notJPEG))
        #expect(DecoderPath.jpegRegion.description == "jpeg-region")
        #expect(DecoderPath.heifRegion.description == "heif-region")
        #expect(DecoderPath.libvips(.multiScan).description == "libvips:multi-scan")
    }

    @Test("progressive and CMYK fixtures render on libvips, the same as before")
    func fallbacks() throws {
        for path in [
            "formats/jpeg_progressive_landscape-1_1350x900.jpg", "colour/cmyk_swop-profile_channel.jpg",
            "colour/cmyk_no-profile_channel.jpg",
        ] {
            let result = try #require(try Self.expectSame(Corpus.bytes(path), input: .centred, minSide: 1, path))
            #expect(!result.decoder.isJPEGRegion)
        }
        // The progressive copy of Landscape_1 gives Landscape_1's avatar (decoded by the other path).
        let progressive = try decode(render("formats/jpeg_progressive_landscape-1_1350x900.jpg").avatar.data).raster
        let baseline = try decode(render("orientation/Landscape_1.jpg").avatar.data).raster
        #expect(progressive.meanAbsoluteDifference(baseline) < Self.tolerance)
    }

    @Test("the choice: only baseline 8-bit grey or YCbCr/RGB JPEGs, small enough regions")
    func selection() {
        let size = PixelSize(width: 4000, height: 3000)
        func jpeg(
            colour: JPEGRegionDecoder.Header.Colour = .yCbCr, components: Int = 3, multiScan: Bool = false,
            arithmetic: Bool = false, precision: Int = 8, size: PixelSize = size
        ) -> JPEGRegionDecoder.Header {
            JPEGRegionDecoder.Header(
                size: size, components: components, colour: colour, multiScan: multiScan, arithmeticCoding: arithmetic,
                precision: precision, adobeTransform: nil, maxHorizontalSampling: 2)
        }
        func choice(_ header: JPEGRegionDecoder.Header?, format: ImageFormat = .jpeg) -> DecoderPath {
            DecoderSelection.fileDecoder(format: format, size: size, jpeg: header)
        }
        #expect(choice(jpeg()) == .jpegRegion)
        #expect(choice(jpeg(colour: .rgb)) == .jpegRegion)
        #expect(choice(jpeg(colour: .grey, components: 1)) == .jpegRegion)
        #expect(choice(jpeg(), format: .png) == .libvips(.notJPEG))
        #expect(choice(nil) == .libvips(.header))
        #expect(choice(jpeg(size: PixelSize(width: 4000, height: 2999))) == .libvips(.header))
        #expect(choice(jpeg(multiScan: true)) == .libvips(.multiScan))
        #expect(choice(jpeg(colour: .cmyk, components: 4)) == .libvips(.cmyk))
        #expect(choice(jpeg(colour: .ycck, components: 4)) == .libvips(.cmyk))
        #expect(choice(jpeg(arithmetic: true)) == .libvips(.arithmeticCoding))
        #expect(choice(jpeg(precision: 12)) == .libvips(.precision))
        #expect(choice(jpeg(colour: .other, components: 2)) == .libvips(.colourSpace))
        #expect(choice(jpeg(colour: .grey, components: 3)) == .libvips(.colourSpace))

        let header = ImageHeader(
            format: .jpeg, storedSize: size, orientation: 1, bands: 3, hasAlpha: false, bitDepth: 8,
            interpretation: "srgb", hasICCProfile: false, byteCount: 1, decoder: .jpegRegion)
        let limit = Int(Double(DecoderSelection.maxRegionPixels).squareRoot())
        #expect(DecoderSelection.decoder(for: header, options: RenderOptions(), regionSide: limit) == .jpegRegion)
        #expect(
            DecoderSelection.decoder(for: header, options: RenderOptions(), regionSide: limit + 1)
                == .libvips(.largeRegion))
        var forced = RenderOptions()
        forced.decoderPreference = .libvips
        #expect(DecoderSelection.decoder(for: header, options: forced, regionSide: 10) == .libvips(.requested))
        var progressive = header
        progressive.decoder = .libvips(.multiScan)
        #expect(DecoderSelection.decoder(for: progressive, options: forced, regionSide: 10) == .libvips(.multiScan))
    }
}
