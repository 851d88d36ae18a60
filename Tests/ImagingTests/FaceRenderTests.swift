import CropGeometry
import Foundation
import TestEnvironment
import Testing

@testable import Imaging

/// The face rule inside the render (docs/ARCHITECTURE.md §2, "Faces"): what a request without a pose gets, and
/// that no input makes it fail where the centred square would not.
@Suite(
    "Faces: the default crop in the render",
    .enabled(if: FacePhotos.model != nil, Comment(rawValue: FacePhotos.missingModel)))
struct FaceRenderTests {
    let face = RenderOptions(defaultCrop: .face)
    let centre = RenderOptions(defaultCrop: .centre)

    init() {
        #expect(FaceSetup.installed)
    }

    @Test(
        "no face: the avatar is the centred one byte for byte",
        .enabled(if: FacePhotos.skimage != nil, Comment(rawValue: FacePhotos.missingSkimage)))
    func noFaceIsCentred() throws {
        for name in ["coffee.png", "chelsea.png"] {
            let bytes = try FaceSetup.skimage(name)
            let withRule = try renderer(minSide: 1).render(bytes, input: .centred, options: face)
            let centred = try renderer(minSide: 1).render(bytes, input: .centred, options: centre)
            #expect(withRule.avatar.data == centred.avatar.data, "\(name)")
            #expect(withRule.plan == centred.plan)
            let report = try #require(withRule.faces)
            #expect(!report.ruleUsed && report.faces.isEmpty && report.error == nil)
            // The detector's own time is part of the whole, and something ran.
            #expect(report.detectorTime > .zero && report.detectorTime <= report.time)
            #expect(centred.faces == nil)
        }
    }

    @Test(
        "a face: the square frames it, the report says so, a pose never looks",
        .enabled(if: FacePhotos.skimage != nil, Comment(rawValue: FacePhotos.missingSkimage)))
    func faceSquare() throws {
        let bytes = try FaceSetup.scene().jpegData(quality: 92, strip: true)
        let result = try renderer().render(bytes, input: .centred, options: face)
        let report = try #require(result.faces)
        #expect(report.ruleUsed && report.faces.count == 1 && report.kept == [0] && !report.largestOnly)
        let box = report.faces[0]
        let crop = result.plan.pixelCrop
        #expect(FaceSetup.inside((box.x, box.y, box.width, box.height), crop))
        let centred = try renderer().render(bytes, input: .centred, options: centre)
        #expect(!FaceSetup.inside((box.x, box.y, box.width, box.height), centred.plan.pixelCrop))
        let posed = try renderer().render(
            bytes, input: .pose(EditorPose(scale: 1), reference: nil), options: face)
        #expect(posed.faces == nil)
    }

    @Test(
        "a JPEG is decoded once for the detector and the crop, and renders what two decodes render, byte for byte",
        .enabled(if: FacePhotos.skimage != nil, Comment(rawValue: FacePhotos.missingSkimage)))
    func sharedFrame() throws {
        // Without a face: the centred avatar. A 4:3 photo, 1/4 and 1/1 scales; grey too; EXIF-rotated.
        let coffee = try VipsLoader.open(InputBytes(FaceSetup.skimage("coffee.png")), as: .png).copyMemory()
        let photos: [(String, [UInt8])] = [
            ("coffee 600×400", try coffee.jpegData(quality: 90, strip: true)),
            ("coffee ×4", try coffee.resize(horizontal: 4, vertical: 4).jpegData(quality: 90, strip: true)),
            ("coffee grey", try coffee.extractBands(0, count: 1).jpegData(quality: 90, strip: true)),
            ("coffee EXIF 6", JPEGEditing.withOrientation(try coffee.jpegData(quality: 90, strip: true), 6)),
        ]
        for (name, bytes) in photos {
            let probed = try renderer().probe(bytes)
            let factor = try #require(FaceFrame.plan(header: probed.header, options: face)?.factor, "\(name)")
            // The frame's square is the region decoder's, pixel for pixel.
            let frame = try #require(
                try FaceFrame.decode(probed.input, header: probed.header, options: face, cancellation: .init()))
            #expect(frame.factor == factor)
            let withRule = try renderer().render(bytes, input: .centred, options: face)
            let centred = try renderer().render(bytes, input: .centred, options: centre)
            let report = try #require(withRule.faces)
            #expect(!report.ruleUsed && report.error == nil, "\(name)")
            #expect(withRule.avatar.data == centred.avatar.data && withRule.plan == centred.plan, "\(name)")
            #expect(withRule.decoder == .jpegRegion, "\(name)")
        }
        // With a face whose square is decoded at the frame's scale: the avatar a request posed on that square gets.
        let scene = try FaceSetup.scene().jpegData(quality: 92, strip: true)
        let found = try renderer().render(scene, input: .centred, options: face)
        let report = try #require(found.faces)
        #expect(report.ruleUsed)
        let probed = try renderer().probe(scene)
        let frameFactor = try #require(FaceFrame.plan(header: probed.header, options: face)?.factor)
        #expect(found.shrinkFactor == frameFactor)
        let choice = try #require(CropGeometry.faceChoice(faces: report.faces, source: probed.header.orientedSize))
        let posed = try renderer().render(scene, input: choice.input, options: centre)
        #expect(posed.plan == found.plan && posed.avatar.data == found.avatar.data)
        // The detector read the frame's pixels (upright, at the frame's scale), not a small image of its own.
        let frameSize = PixelSize(
            width: probed.header.orientedSize.width / frameFactor,
            height: probed.header.orientedSize.height / frameFactor)
        #expect(report.detectionSize == frameSize)
        // Every EXIF orientation: the detector turns the stored frame upright, and the face square is the same.
        let upright = found.plan.pixelCrop
        for orientation in 2...8 {
            let stored = try FaceSetup.stored(FaceSetup.scene(), for: orientation).jpegData(quality: 92, strip: true)
            let turned = JPEGEditing.withOrientation(stored, orientation)
            #expect(FaceFrame.plan(header: try renderer().probe(turned).header, options: face) != nil)
            let rendered = try renderer().render(turned, input: .centred, options: face)
            #expect(rendered.faces?.detectionSize == frameSize, "orientation \(orientation)")
            let square = rendered.plan.pixelCrop
            #expect(
                abs(square.x - upright.x) <= 2 && abs(square.y - upright.y) <= 2
                    && abs(square.side - upright.side) <= 2,
                "orientation \(orientation): \(square) against \(upright)")
        }
        // A panorama's frame would be mostly pixels no square uses: no frame, the detector's own small decode.
        let panorama = try coffee.resize(horizontal: 4, vertical: 1).jpegData(quality: 90, strip: true)
        #expect(FaceFrame.plan(header: try renderer().probe(panorama).header, options: face) == nil)
        // A 64 px avatar's scale leaves a frame smaller than the detector's canvas: no frame either.
        var tiny = face
        tiny.settings.outputSize = 64
        #expect(FaceFrame.plan(header: try renderer().probe(photos[1].1).header, options: tiny) == nil)
    }

    @Test("a WebP is loaded once for the detector and the crop, and without a face renders the centred avatar")
    func sharedWebPFrame() throws {
        // libwebp decodes every pixel at any scale: the frame is the loader's image the render would load again.
        let bytes = try Corpus.bytes("formats/webp_lossy_gallery-4_1024x772.webp")
        let probed = try renderer().probe(bytes)
        let planned = try #require(FaceFrame.plan(header: probed.header, options: face))
        #expect(FaceFrame.extraBytes(header: probed.header, options: face) == 0)
        let frame = try #require(
            try FaceFrame.decode(probed.input, header: probed.header, options: face, cancellation: .init()))
        #expect(frame.factor == planned.factor && frame.image.width == 1024 && frame.image.height == 772)
        let withRule = try renderer().render(bytes, input: .centred, options: face)
        let centred = try renderer().render(bytes, input: .centred, options: centre)
        let report = try #require(withRule.faces)
        #expect(!report.ruleUsed && report.faces.isEmpty && report.error == nil)
        #expect(withRule.avatar.data == centred.avatar.data && withRule.plan == centred.plan)
    }

    @Test(
        "a small PNG is loaded once for the detector and the crop; without a face it renders the centred avatar",
        .enabled(if: FacePhotos.skimage != nil, Comment(rawValue: FacePhotos.missingSkimage)))
    func sharedPNGFrame() throws {
        // No face: the frame is the loader's whole image, counted whole (libvips would stream it), and the avatar is
        // the centred one byte for byte.
        let coffee = try FaceSetup.skimage("coffee.png")
        let probed = try renderer().probe(coffee)
        #expect(probed.header.format == .png && !probed.header.interlaced)
        #expect(FaceFrame.plan(header: probed.header, options: face)?.factor == 1)
        #expect(FaceFrame.extraBytes(header: probed.header, options: face) == 600 * 400 * 3)
        let withRule = try renderer().render(coffee, input: .centred, options: face)
        let centred = try renderer().render(coffee, input: .centred, options: centre)
        let report = try #require(withRule.faces)
        #expect(!report.ruleUsed && report.error == nil && report.detectionSize == PixelSize(width: 600, height: 400))
        #expect(withRule.avatar.data == centred.avatar.data && withRule.plan == centred.plan)
        // A face: the detector read the frame, and the avatar is what a request posed on the face square gets.
        let astronaut = try FaceSetup.skimage("astronaut.png")
        let found = try renderer().render(astronaut, input: .centred, options: face)
        let faces = try #require(found.faces)
        #expect(faces.ruleUsed && faces.detectionSize == PixelSize(width: 512, height: 512))
        let header = try renderer().probe(astronaut).header
        let choice = try #require(CropGeometry.faceChoice(faces: faces.faces, source: header.orientedSize))
        let posed = try renderer().render(astronaut, input: choice.input, options: centre)
        #expect(posed.plan == found.plan && posed.avatar.data == found.avatar.data)
        // Past the cap no frame (the detector decodes the PNG itself); an interlaced PNG's frame costs nothing more.
        let large = MemoryAdmissionTests.header(.png, 1200, 1000, bands: 4)
        #expect(1200 * 1000 * 4 > FaceFrame.maxPNGFrameBytes && FaceFrame.plan(header: large, options: face) == nil)
        let interlaced = MemoryAdmissionTests.header(.png, 600, 400, interlaced: true)
        #expect(FaceFrame.plan(header: interlaced, options: face) != nil)
        #expect(FaceFrame.extraBytes(header: interlaced, options: face) == 0)
    }

    @Test("a HEIC without a thumbnail item is decoded once too, in every irot/imir, and renders the centred avatar")
    func sharedHEIFFrame() throws {
        let original = try Corpus.bytes(HEIFRegionDecoderTests.fixture)
        // 512 px: the whole image at 1/1; 300 px: box-shrunk by 2 (504 × 378, still more than the detector's canvas).
        var small = face
        small.settings.outputSize = 300
        for (exif, steps) in HEIFRegionDecoderTests.transforms {
            let bytes = try HEIFEditing.adding(steps, to: original)
            for options in [face, small] {
                var centred = options
                centred.defaultCrop = .centre
                let probed = try renderer().probe(bytes)
                #expect(probed.header.decoder == .heifRegion && probed.header.heifLayout?.thumbnailSize == nil)
                let plan = try #require(FaceFrame.plan(header: probed.header, options: options), "EXIF \(exif)")
                let withRule = try renderer().render(bytes, input: .centred, options: options)
                let plain = try renderer().render(bytes, input: .centred, options: centred)
                #expect(withRule.faces?.ruleUsed == false && withRule.faces?.error == nil)
                #expect(withRule.shrinkFactor == plan.factor)
                #expect(
                    withRule.avatar.data == plain.avatar.data,
                    "EXIF \(exif), \(options.settings.outputSize) px: not the centred avatar")
            }
        }
    }

    @Test("hostile inputs: the face default fails only where the centred square fails")
    func hostileInputs() throws {
        var inputs: [(String, [UInt8])] = []
        for path in [
            "formats/gif_animated_loop-3_370x285.gif", "colour/cmyk_swop-profile_channel.jpg",
            "colour/cmyk_no-profile_channel.jpg", "colour/rgba_blackbug_2048x1536.png",
            "formats/heic_iphone-7-plus_1008x756.heic", "formats/webp_animated_loop-3_370x285.webp",
        ] where Corpus.has(path) {
            inputs.append((path, try Corpus.bytes(path)))
        }
        for name in try Hostile.names() {
            inputs.append((name, try Hostile.bytes(name)))
        }
        // 1×2000 and 3×5000 strips (JPEG: libvips' shrink-on-load of a strip narrower than the shrink aborted the
        // process before `SmallDecode` kept a short side), and a 16-bit PNG (libvips' own writer, when its
        // command is installed).
        for (width, height) in [(1, 2000), (3, 5000), (2000, 1)] {
            let strip = try VImage.filling(
                width: width, height: height, bands: 3, maxPixels: width * height, operation: "strip"
            ) {
                for index in $0.indices { $0[index] = UInt8(truncatingIfNeeded: index) }
            }
            inputs.append(("\(width)×\(height) strip", try strip.jpegData(quality: 90, strip: true)))
        }
        if let sixteen = try sixteenBitPNG() { inputs.append(("16-bit png", sixteen)) }
        #expect(inputs.count >= 8)
        for (name, bytes) in inputs {
            let centred = Result { try renderer(minSide: 1).render(bytes, input: .centred, options: centre) }
            let withRule = Result { try renderer(minSide: 1).render(bytes, input: .centred, options: face) }
            switch (withRule, centred) {
            case (.success(let rendered), .success):
                #expect(rendered.faces != nil, "\(name)")
            case (.failure(let a as ImagingError), .failure(let b as ImagingError)):
                #expect(a.code == b.code, "\(name)")
            default:
                Issue.record("\(name): the face default gave \(withRule), the centred one \(centred)")
            }
        }
    }

    @Test("a crowd: at most the detector's cap of boxes, in bounded time; tiny and 1×N inputs do not crash it")
    func crowdAndTinyInputs() throws {
        // minScore 0: every anchor of the canvas is a candidate (about 2,100), suppression keeps the cap.
        let side = 320
        let noise = [UInt8]((0..<side * side * 3).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        let clock = ContinuousClock()
        let start = clock.now
        let crowd = try noise.withUnsafeBytes { pixels in
            try FaceDetectors.withDetector(shape: .square) { detector throws(FaceDetectionError) in
                try detector.detect(
                    pixels: pixels, width: side, height: side, stride: side * 3, bands: 3, orientation: .upright,
                    minScore: 0)
            }
        }
        #expect(crowd.count == FaceDetector.maxFaces)
        #expect(clock.now - start < .seconds(5))
        for (width, height) in [(1, 1), (3, 2), (1, 5000), (5000, 1), (2, 320)] {
            let pixels = [UInt8](repeating: 200, count: width * height * 3)
            // RGB upright, and grey turned a quarter (the detector fits stored pixels, then turns them).
            for shape in FaceDetector.Shape.all {
                for (bands, exif) in [(3, 1), (1, 6)] {
                    let faces = try pixels.withUnsafeBytes { buffer in
                        try FaceDetectors.withDetector(shape: shape) { detector throws(FaceDetectionError) in
                            try detector.detect(
                                pixels: buffer, width: width, height: height, stride: width * bands, bands: bands,
                                orientation: Orientation(exif: exif), minScore: FaceRule().minScore)
                        }
                    }
                    #expect(faces.isEmpty, "\(width)×\(height), \(bands) bands, EXIF \(exif), on \(shape)")
                }
            }
        }
    }

    @Test("the model is checked: a missing file and other bytes are refused")
    func modelChecks() throws {
        #expect(throws: FaceDetectionError.self) { try FaceModel.load(path: "/nonexistent/model.onnx") }
        let other = FileManager.default.temporaryDirectory.appendingPathComponent("not-yunet-\(UUID().uuidString)")
        try Data("not a model".utf8).write(to: other)
        defer { try? FileManager.default.removeItem(at: other) }
        do {
            _ = try FaceModel.load(path: other.path)
            Issue.record("a file with another hash was accepted")
        } catch {
            #expect(error.code == .modelInvalid)
        }
        let model = try #require(FacePhotos.model)
        #expect(try FaceModel.load(path: model.path).bytes.count == 232_589)
    }

    /// A 16-bit RGB PNG of the astronaut, written by libvips' command (nil without it or the photo).
    private func sixteenBitPNG() throws -> [UInt8]? {
        guard let vips = TestService.tool("vips").value, let folder = FacePhotos.skimage else { return nil }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("rgb16-\(UUID().uuidString).png")
        defer { try? FileManager.default.removeItem(at: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: vips)
        process.arguments = ["colourspace", folder.appendingPathComponent("astronaut.png").path, output.path, "rgb16"]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return [UInt8](try Data(contentsOf: output))
    }
}
