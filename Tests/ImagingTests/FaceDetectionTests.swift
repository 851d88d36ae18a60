import CropGeometry
import Foundation
import TestEnvironment
import Testing

@testable import Imaging

/// The face detector and the face rule on real photos (docs/ARCHITECTURE.md §2, "Faces"). The photos come from
/// Debian packages (`FacePhotos`); without them, or without the fetched model, the tests say so and skip.
enum FaceSetup {
    /// The model, installed once for this test process.
    static let installed: Bool = {
        guard let model = FacePhotos.model else { return false }
        return FaceDetectors.install(modelPath: model.path) == nil
    }()

    static let rule = FaceRule()

    /// Probes `bytes` (any size) and runs the production detection on it: faces in oriented pixels.
    static func faces(_ bytes: [UInt8]) throws -> (faces: [FaceBox], header: ImageHeader, size: PixelSize) {
        #expect(installed)
        let probed = try renderer(minSide: 1).probe(bytes)
        let (faces, size, _) = try FaceFinder.detect(probed.input, header: probed.header, minScore: rule.minScore)
        return (faces, probed.header, size)
    }

    /// The square the face rule plans for `bytes` (nil: no face counted).
    static func faceSquare(_ bytes: [UInt8]) throws -> PixelCrop? {
        let (faces, header, _) = try Self.faces(bytes)
        guard let choice = CropGeometry.faceChoice(faces: faces, source: header.orientedSize, rule: rule) else {
            return nil
        }
        return try CropGeometry.plan(source: header.orientedSize, input: choice.input).pixelCrop
    }

    static func skimage(_ name: String) throws -> [UInt8] {
        guard let folder = FacePhotos.skimage else { throw TestFailure(FacePhotos.missingSkimage) }
        return [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
    }

    static func pascal(_ name: String) throws -> [UInt8] {
        guard let folder = FacePhotos.pascal else { throw TestFailure(FacePhotos.missingPascal) }
        return [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
    }

    /// A detection matches an annotation when each box's centre lies inside the other.
    static func matches(_ face: FaceBox, _ box: (x: Double, y: Double, width: Double, height: Double)) -> Bool {
        let faceX = face.x + face.width / 2, faceY = face.y + face.height / 2
        let boxX = box.x + box.width / 2, boxY = box.y + box.height / 2
        return face.x <= boxX && boxX <= face.x + face.width && face.y <= boxY && boxY <= face.y + face.height
            && box.x <= faceX && faceX <= box.x + box.width && box.y <= faceY && faceY <= box.y + box.height
    }

    static func inside(_ box: (x: Double, y: Double, width: Double, height: Double), _ crop: PixelCrop) -> Bool {
        box.x >= Double(crop.x) && box.y >= Double(crop.y) && box.x + box.width <= Double(crop.x + crop.side)
            && box.y + box.height <= Double(crop.y + crop.side)
    }

    /// A 1400×800 grey scene with the astronaut (one face) pasted off-centre, top right: the centred square
    /// cuts her face, the face rule must not.
    static func scene() throws -> VImage {
        let astronaut = try decode(skimage("astronaut.png")).raster
        let (width, height, left, top) = (1400, 800, 880, 40)
        return try VImage.filling(width: width, height: height, bands: 3, maxPixels: width * height, operation: "scene")
        { pixels in
            for y in 0..<height {
                for x in 0..<width {
                    let inside = x >= left && x < left + astronaut.width && y >= top && y < top + astronaut.height
                    for band in 0..<3 {
                        pixels[(y * width + x) * 3 + band] =
                            inside ? astronaut[x - left, y - top, min(band, astronaut.bands - 1)] : 128
                    }
                }
            }
        }
    }

    /// The stored pixels that EXIF `orientation` turns back into `upright`.
    static func stored(_ upright: VImage, for orientation: Int) throws -> VImage {
        switch orientation {
        case 2: try upright.flipHorizontally()
        case 3: try upright.rotate(.clockwise180)
        case 4: try upright.rotate(.clockwise180).flipHorizontally()
        case 5: try upright.rotate(.clockwise90).flipHorizontally()
        case 6: try upright.rotate(.clockwise270)
        case 7: try upright.rotate(.clockwise270).flipHorizontally()
        case 8: try upright.rotate(.clockwise90)
        default: upright
        }
    }
}

@Suite(
    "Faces: the detector on packaged photos",
    .enabled(if: FacePhotos.model != nil, Comment(rawValue: FacePhotos.missingModel)))
struct FaceDetectionTests {
    @Test(
        "every annotated PASCAL face is found at the production canvas, with at most 3 extra boxes per photo",
        .enabled(if: FacePhotos.pascal != nil, Comment(rawValue: FacePhotos.missingPascal)))
    func pascalFaces() throws {
        let photos = try FacePhotos.annotated()
        #expect(photos.count >= 9)
        var found = 0
        var annotated = 0
        for photo in photos {
            let faces = try FaceSetup.faces(FaceSetup.pascal(photo.file)).faces
            var used = Set<Int>()
            for box in photo.boxes {
                annotated += 1
                if let index = faces.indices.first(where: { !used.contains($0) && FaceSetup.matches(faces[$0], box) }) {
                    used.insert(index)
                    found += 1
                } else {
                    Issue.record("\(photo.file): the face at \(box) was not found")
                }
            }
            #expect(faces.count - used.count <= 3, "\(photo.file): \(faces.count - used.count) extra boxes")
        }
        #expect(found == annotated && annotated >= 43)
    }

    @Test(
        "exactly one face on the astronaut; none on coffee and the cat",
        .enabled(if: FacePhotos.skimage != nil, Comment(rawValue: FacePhotos.missingSkimage)))
    func skimagePhotos() throws {
        let astronaut = try FaceSetup.faces(FaceSetup.skimage("astronaut.png")).faces
        #expect(astronaut.count == 1)
        // Her face, by hand: about x 180–270, y 60–175 of the 512×512 photo.
        if let face = astronaut.first {
            #expect(FaceSetup.matches(face, (180, 60, 90, 115)))
            #expect(face.score >= FaceSetup.rule.minScore)
        }
        for name in ["coffee.png", "chelsea.png"] {
            #expect(try FaceSetup.faces(FaceSetup.skimage(name)).faces.isEmpty, "\(name)")
        }
    }

    @Test(
        "the detector decodes at most the canvas, from the format's small decode",
        .enabled(if: FacePhotos.skimage != nil, Comment(rawValue: FacePhotos.missingSkimage)))
    func smallDecode() throws {
        let jpeg = try FaceSetup.scene().jpegData(quality: 90, strip: true)
        let (_, _, size) = try FaceSetup.faces(jpeg)
        // 1400×800: DCT 1/4 (350×200), then resized into the canvas.
        #expect(size == PixelSize(width: 320, height: 183))
    }

    @Test(
        "a HEIC's thumbnail item is decoded once, by the HEIF region decoder, as libvips decodes it",
        .enabled(if: Corpus.has(Self.heicWithThumbnail)))
    func heifThumbnail() throws {
        try Vips.initialise()
        let probed = try renderer(minSide: 1).probe(try Corpus.bytes(Self.heicWithThumbnail))
        let thumbnail = try #require(probed.header.heifLayout?.thumbnailSize)
        #expect(probed.header.decoder == .heifRegion)
        #expect(SmallDecode.regionThumbnail(probed.input, header: probed.header) != nil, "the region decoder took it")
        let small = try SmallDecode.upright(probed.input, header: probed.header, fitting: FaceDetector.canvas)
        // libvips' thumbnail load, resized the same way: the same image, as displayed (a few levels apart, the two
        // YCbCr conversions' rounding).
        let vips = try SmallDecode.fitted(VipsLoader.openHEIFThumbnail(probed.input), side: FaceDetector.canvas)
        #expect(small.width == vips.width && small.height == vips.height)
        #expect(thumbnail.width < thumbnail.height && small.width < small.height, "portrait, as displayed")
        let difference = Raster(width: small.width, height: small.height, bands: 3, pixels: try small.pixels())
            .meanAbsoluteDifference(Raster(width: vips.width, height: vips.height, bands: 3, pixels: try vips.pixels()))
        #expect(difference < 2, "mean difference \(difference)")
    }

    static let heicWithThumbnail = "formats/heic_iphone-ios18_tmap-gainmap_4284x5712.heic"

    @Test("an oblong photo is detected on an oblong canvas, a near-square one on the square")
    func canvasShapes() {
        let cases: [(PixelSize, FaceDetector.Shape)] = [
            (PixelSize(width: 320, height: 240), FaceDetector.Shape(width: 320, height: 256)),
            (PixelSize(width: 240, height: 320), FaceDetector.Shape(width: 256, height: 320)),
            (PixelSize(width: 320, height: 180), FaceDetector.Shape(width: 320, height: 256)),
            (PixelSize(width: 320, height: 256), FaceDetector.Shape(width: 320, height: 256)),
            (PixelSize(width: 320, height: 257), .square), (PixelSize(width: 300, height: 320), .square),
            (PixelSize(width: 1, height: 1), .square),
        ]
        for (size, shape) in cases {
            #expect(FaceDetector.Shape(fitting: size) == shape, "\(size)")
        }
    }

    @Test(
        "the oblong canvases find the faces the square canvas finds",
        .enabled(if: FacePhotos.pascal != nil, Comment(rawValue: FacePhotos.missingPascal)))
    func oblongCanvasFindsTheSameFaces() throws {
        #expect(FaceSetup.installed)
        var compared = 0
        for photo in try FacePhotos.annotated() {
            let probed = try renderer(minSide: 1).probe(try FaceSetup.pascal(photo.file))
            let small = try SmallDecode.upright(probed.input, header: probed.header, fitting: FaceDetector.canvas)
            let shape = FaceDetector.Shape(fitting: PixelSize(width: small.width, height: small.height))
            guard shape != .square else { continue }
            let (square, oblong) = try small.withPixels { pixels in
                Result { () throws(FaceDetectionError) in
                    let detect = { (shape: FaceDetector.Shape) throws(FaceDetectionError) in
                        try FaceDetectors.withDetector(shape: shape) { detector throws(FaceDetectionError) in
                            try detector.detect(
                                pixels: pixels, width: small.width, height: small.height, stride: small.width * 3,
                                bands: 3, orientation: .upright, minScore: FaceSetup.rule.minScore)
                        }
                    }
                    return (try detect(.square), try detect(shape))
                }
            }.get()
            compared += 1
            #expect(square.count == oblong.count, "\(photo.file): \(square.count) against \(oblong.count)")
            for face in square {
                #expect(
                    oblong.contains { FaceSetup.matches($0, (face.x, face.y, face.width, face.height)) },
                    "\(photo.file): \(face) not found on \(shape)")
            }
        }
        #expect(compared >= 5)
    }

    @Test(
        "networks released are built again: the same faces after `releaseNetworks`",
        .enabled(if: FacePhotos.pascal != nil, Comment(rawValue: FacePhotos.missingPascal)))
    func releasedNetworksAreRebuilt() throws {
        let bytes = try FaceSetup.pascal("2008_007676.jpg")
        let before = try FaceSetup.faces(bytes).faces
        #expect(!before.isEmpty)
        FaceDetectors.releaseNetworks()
        #expect(FaceDetectors.isInstalled, "the model stays")
        #expect(try FaceSetup.faces(bytes).faces == before)
    }

    @Test("a process keeping fewer networks drops other canvases' first, then the oldest of the last one used")
    func keptNetworks() {
        var idle: [FaceDetector.Shape: [Int]] = [.square: [1, 2], .landscape: [3], .portrait: [4, 5]]
        #expect(FaceDetectors.overflow(of: &idle, keeping: 6, lastUsed: .square).isEmpty)
        let dropped = FaceDetectors.overflow(of: &idle, keeping: 1, lastUsed: .portrait)
        #expect(Set(dropped) == [1, 2, 3, 4])
        #expect(idle.values.flatMap { $0 } == [5])
        #expect(FaceDetectors.overflow(of: &idle, keeping: 0, lastUsed: .square) == [5])
    }

    @Test("the same photo gives the same faces every time")
    func deterministic() throws {
        guard FacePhotos.pascal != nil else { return }
        let bytes = try FaceSetup.pascal("2008_007676.jpg")
        let first = try FaceSetup.faces(bytes).faces
        for _ in 0..<3 { #expect(try FaceSetup.faces(bytes).faces == first) }
    }

    @Test(
        "EXIF orientations 1–8 of one photo give the same upright face square within 2 px",
        .enabled(if: FacePhotos.skimage != nil, Comment(rawValue: FacePhotos.missingSkimage)))
    func exifOrientations() throws {
        let scene = try FaceSetup.scene()
        let upright = try #require(try FaceSetup.faceSquare(scene.jpegData(quality: 92, strip: true)))
        // The centred square would cut her: the face square is elsewhere.
        #expect(upright.x > 200)
        for orientation in 1...8 {
            let stored = try FaceSetup.stored(scene, for: orientation).jpegData(quality: 92, strip: true)
            let square = try #require(
                try FaceSetup.faceSquare(JPEGEditing.withOrientation(stored, orientation)), "orientation \(orientation)"
            )
            #expect(
                abs(square.x - upright.x) <= 2 && abs(square.y - upright.y) <= 2
                    && abs(square.side - upright.side) <= 2,
                "orientation \(orientation): \(square) against \(upright)")
        }
    }

    @Test(
        "a large progressive JPEG is looked at through its DC scans alone, in every EXIF orientation",
        .enabled(if: FacePhotos.skimage != nil, Comment(rawValue: FacePhotos.missingSkimage)),
        .enabled(if: TestService.tool("jpegtran").isPresent, "jpegtran (libjpeg-turbo-progs) on PATH"))
    func progressiveDCScans() throws {
        // 2800 × 1600: decoded at 1/8 for the detector, where a progressive file's DC scans are enough.
        let scene = try FaceSetup.scene().resize(horizontal: 2, vertical: 2)
        let upright = try #require(try FaceSetup.faceSquare(scene.jpegData(quality: 92, strip: true)))
        #expect(upright.x > 400)
        for orientation in 1...8 {
            let stored = try FaceSetup.stored(scene, for: orientation).jpegData(quality: 92, strip: true)
            let progressive = JPEGEditing.withOrientation(try jpegtran(stored, "-progressive"), orientation)
            // Cut before its first AC scan: only the DC preview can still see the photo (libvips' loader runs out of
            // data), so the square found proves that path ran.
            let secondScan = try #require(JPEGRegionDecoderTests.markerOffsets(0xDA, in: progressive).dropFirst().first)
            let square = try #require(
                try FaceSetup.faceSquare(Array(progressive.prefix(secondScan))), "orientation \(orientation)")
            // Within one pixel of the 1/8 image the detector saw.
            #expect(
                abs(square.x - upright.x) <= 8 && abs(square.y - upright.y) <= 8
                    && abs(square.side - upright.side) <= 8,
                "orientation \(orientation): \(square) against \(upright)")
        }
    }

    @Test(
        "an AVIF turned upright by irot gives the upright face square within 2 px",
        .enabled(if: FacePhotos.skimage != nil, Comment(rawValue: FacePhotos.missingSkimage)),
        .enabled(if: TestService.tool("avifenc").isPresent, "avifenc (libavif-bin) on PATH"))
    func heifRotation() throws {
        let scene = try FaceSetup.scene()
        let upright = try #require(try FaceSetup.faceSquare(scene.jpegData(quality: 92, strip: true)))
        // Stored a quarter turn clockwise; irot 1 (a quarter turn anticlockwise) displays it upright.
        let stored = try scene.rotate(.clockwise90).jpegData(quality: 95, strip: true)
        let avif = try avifenc(stored, irot: 1)
        let square = try #require(try FaceSetup.faceSquare(avif))
        #expect(
            abs(square.x - upright.x) <= 2 && abs(square.y - upright.y) <= 2 && abs(square.side - upright.side) <= 2,
            "\(square) against \(upright)")
    }

    @Test(
        "on the group photos the face square keeps more annotated faces whole than the centred one",
        .enabled(if: FacePhotos.pascal != nil, Comment(rawValue: FacePhotos.missingPascal)))
    func groupPhotos() throws {
        var better: [String] = []
        var totals = (face: 0, centred: 0)
        for photo in try FacePhotos.annotated() where photo.boxes.count >= 2 {
            let bytes = try FaceSetup.pascal(photo.file)
            let (faces, header, _) = try FaceSetup.faces(bytes)
            let centred = try CropGeometry.plan(source: header.orientedSize, input: .centred).pixelCrop
            let choice = try #require(CropGeometry.faceChoice(faces: faces, source: header.orientedSize))
            let face = try CropGeometry.plan(source: header.orientedSize, input: choice.input).pixelCrop
            let keptFace = photo.boxes.filter { FaceSetup.inside($0, face) }.count
            let keptCentred = photo.boxes.filter { FaceSetup.inside($0, centred) }.count
            totals.face += keptFace
            totals.centred += keptCentred
            if keptFace > keptCentred { better.append(photo.file) }
        }
        #expect(!better.isEmpty)
        #expect(totals.face > totals.centred, "\(totals)")
    }

    /// `jpeg` rewritten losslessly by jpegtran with `options` (e.g. `-progressive`).
    private func jpegtran(_ jpeg: [UInt8], _ options: String...) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try TestService.tool("jpegtran").require())
        process.arguments = options + ["-copy", "all"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The whole file fits the pipe's writer thread-free only if small: write and read concurrently.
        let writer = Thread {
            input.fileHandleForWriting.write(Data(jpeg))
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, !data.isEmpty else { throw TestFailure("jpegtran failed") }
        return [UInt8](data)
    }

    /// `jpeg` as an AVIF with an `irot` property of `irot` quarter turns anticlockwise (avifenc 0.11's options).
    private func avifenc(_ jpeg: [UInt8], irot: Int) throws -> [UInt8] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("faces-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("in.jpg"), output = folder.appendingPathComponent("out.avif")
        try Data(jpeg).write(to: input)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try TestService.tool("avifenc").require())
        process.arguments = ["--min", "10", "--max", "20", "-s", "8", "--irot", "\(irot)", input.path, output.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestFailure("avifenc failed") }
        return [UInt8](try Data(contentsOf: output))
    }
}
