import CropGeometry
import Dispatch
import Testing

@testable import Imaging

/// Formats, sizes, shrink-on-load, fallback and renditions against real files. Tests whose photos only
/// the larger corpus holds run when it is present (`AVATAR_TEST_CORPUS`).
@Suite("Test photos: rendering")
struct CorpusRenderTests {
    @Test(
        "shortest side below 320 is too small, with the exact message",
        arguments: Corpus.existing([
            "size/craft-beer_319x320.jpg", "size/craft-beer_319x479.jpg", "size/real-small_canon-40d_100x68.jpg",
            "size/real-small_test-pattern_320x240.jpg", "colour/png16_sample_290x442.png",
        ]))
    func tooSmall(path: String) throws {
        let bytes = try Corpus.bytes(path)
        for attempt in 0..<2 {
            do {
                if attempt == 0 {
                    _ = try renderer().probe(bytes)
                } else {
                    _ = try renderer().render(bytes, input: .centred, options: RenderOptions())
                }
                Issue.record("\(path) accepted")
            } catch {
                #expect(error.code == .tooSmall)
            }
        }
    }

    @Test(
        "320 px and larger are accepted",
        arguments: Corpus.existing([
            "size/craft-beer_320x320.jpg", "size/craft-beer_320x480.jpg", "size/craft-beer_640x640.jpg",
            "size/craft-beer_640x960.jpg", "size/craft-beer_960x640.webp",
        ]))
    func accepted(path: String) throws {
        let result = try render(path)
        let output = try decode(result.avatar.data)
        #expect(output.raster.width == 512 && output.raster.height == 512)
        #expect(
            result.plan.qualityLimited
                == (min(result.header.orientedSize.width, result.header.orientedSize.height) < 640))
    }

    @Test("animated GIF and WebP: the first frame only")
    func animated() throws {
        if Corpus.has("formats/gif_animated_cmu1-pan_400x400.gif") {
            let gif = try render("formats/gif_animated_cmu1-pan_400x400.gif")
            #expect(gif.header.format == .gif)
            #expect(gif.header.storedSize == PixelSize(width: 400, height: 400))  // one frame, not the page strip
        }
        let loopGIF = try render("formats/gif_animated_loop-3_370x285.gif", minSide: 1)
        #expect(loopGIF.header.storedSize == PixelSize(width: 370, height: 285))  // one frame, not the page strip
        let loopWebP = try render("formats/webp_animated_loop-3_370x285.webp", minSide: 1)
        #expect(loopWebP.header.storedSize == PixelSize(width: 370, height: 285))
        // Both files hold the same animation: their first frames match.
        let difference = try decode(loopGIF.avatar.data).raster.meanAbsoluteDifference(
            decode(loopWebP.avatar.data).raster)
        #expect(difference < 8, "first frames differ by \(difference)")
    }

    @Test("HEIC and AVIF decode")
    func heif() throws {
        let heic = try render("formats/heic_iphone-7-plus_1008x756.heic")
        #expect(heic.header.format == .heif)
        #expect(heic.header.orientedSize == PixelSize(width: 1008, height: 756))
        var results = [heic]
        if Corpus.has("formats/heic_iphone-7-plus_Example1.heic") {
            let original = try render("formats/heic_iphone-7-plus_Example1.heic")
            #expect(original.header.orientedSize == PixelSize(width: 4032, height: 3024))
            results.append(original)
        }
        if Corpus.has("orientation/avif_orientation-6_gps.avif") {
            let avif = try render("orientation/avif_orientation-6_gps.avif")
            #expect(avif.header.format == .heif)
            results.append(avif)
        }
        for result in results {
            let raster = try decode(result.avatar.data).raster
            #expect(raster.width == 512)
            #expect(raster.mean(band: 0) > 10 && raster.mean(band: 0) < 245)  // a photo, not a blank frame
        }
    }

    @Test(
        "panoramas: the centred square of the short side",
        arguments: Corpus.existing([
            "panorama/pano_cmu1_6000x771.jpg", "panorama/pano_nsh-cyl_5907x948.jpg",
            "panorama/equirect_pannellum_4096x2048.jpg",
        ]))
    func panorama(path: String) throws {
        let result = try render(path)
        let size = result.header.orientedSize
        #expect(result.plan.pixelCrop.side == size.height)
        #expect(abs(result.plan.pixelCrop.x - (size.width - size.height) / 2) <= 1)
        #expect(result.plan.pixelCrop.y == 0)
        #expect(try decode(result.avatar.data).raster.width == 512)
    }

    @Test(
        "big JPEGs decode shrunk on load while the crop keeps at least 512 px",
        arguments: Corpus.existing([
            "camera/pd_craft-beer_24mp_progressive.jpg", "camera/dslr_nikon-d3100_14mp_big-exif.jpg",
            "camera/phone_samsung-galaxy-s7-edge_12mp_gps.jpg", "camera/phone_iphone-4s_8mp_orientation-6.jpg",
        ]))
    func shrinkOnLoad(path: String) throws {
        let result = try render(path)
        #expect(result.shrinkFactor > 1)
        #expect(result.decodeSize.width < result.header.orientedSize.width)
        #expect(result.decodeSize.height < result.header.orientedSize.height)
        #expect(result.plan.pixelCrop.side / result.shrinkFactor >= 512)
        #expect(!result.fallbackUsed)
    }

    @Test(
        "a zoomed-in crop decodes at full size", .enabled(if: Corpus.has("camera/pd_craft-beer_24mp_progressive.jpg")))
    func zoomedInNoShrink() throws {
        let result = try render(
            "camera/pd_craft-beer_24mp_progressive.jpg",
            input: .rect(PixelRect(x: 2500, y: 1000, side: 1000), reference: nil))
        #expect(result.plan.pixelCrop.side == 1000)
        #expect(result.shrinkFactor == 1)
        #expect(result.decodeSize == result.header.orientedSize)
    }

    @Test(
        "the fallback decodes at thumbnail resolution and yields an avatar close to the full one",
        .enabled(if: Corpus.has("camera/pd_craft-beer_24mp_progressive.jpg")))
    func fallback() throws {
        let path = "camera/pd_craft-beer_24mp_progressive.jpg"
        let input = CropInput.rect(PixelRect(x: 2500, y: 1000, side: 1000), reference: nil)
        let full = try render(path, input: input)
        let fallback = try render(path, input: input, options: RenderOptions(forceFallback: true))
        #expect(fallback.fallbackUsed && !full.fallbackUsed)
        #expect(max(fallback.decodeSize.width, fallback.decodeSize.height) <= 3200)
        #expect(fallback.decodeSize.width < full.decodeSize.width)
        let difference = try decode(full.avatar.data).raster.meanAbsoluteDifference(decode(fallback.avatar.data).raster)
        #expect(difference < 6, "fallback differs by \(difference)")
        #expect(try decode(fallback.avatar.data).raster.width == 512)

        // The worker's entry point: admission already chose the fallback.
        let bytes = try Corpus.bytes(path)
        let admitted = try renderer().render(
            renderer().probe(bytes), input: .centred, options: RenderOptions(), fallback: true)
        #expect(admitted.fallbackUsed)
    }

    @Test("extra sizes and BlurHash come from the same decode, at exact sizes")
    func extras() throws {
        let result = try render(
            "orientation/Landscape_6.jpg", options: RenderOptions(extraSizes: [80, 1024, 333], blurHash: true))
        #expect(result.extras.map(\.size) == [80, 1024, 333])
        for rendition in [result.avatar] + result.extras {
            let raster = try decode(rendition.data).raster
            #expect(raster.width == rendition.size && raster.height == rendition.size)
        }
        let hash = try #require(result.blurHash)
        #expect(hash.count == 28)
        #expect(hash.first == "L")
        // The avatar made beside a 1024 master matches the one made alone (1.3 of 255 on the 1800×1200
        // original, 2.7 on the 1350×900 fixture, whose 1024 master is upscaled first).
        let alone = try render("orientation/Landscape_6.jpg")
        let difference = try decode(alone.avatar.data).raster.meanAbsoluteDifference(decode(result.avatar.data).raster)
        #expect(difference < 3, "the avatars differ by \(difference)")
    }

    @Test("odd output sizes come out exact", arguments: [333, 511, 1000, 64])
    func exactSize(size: Int) throws {
        let result = try render(
            "orientation/Landscape_6.jpg", options: RenderOptions(settings: EditorSettings(outputSize: size)))
        let raster = try decode(result.avatar.data).raster
        #expect(raster.width == size && raster.height == size)
    }

    @Test("JPEG output: quality is applied, sRGB profile embedded, no EXIF")
    func jpegOutput() throws {
        let path = "orientation/Landscape_1.jpg"
        let high = try render(path, options: RenderOptions(format: .jpeg, jpegQuality: 95))
        let low = try render(path, options: RenderOptions(format: .jpeg, jpegQuality: 50))
        #expect(high.avatar.data.count > low.avatar.data.count)
        let output = try decode(high.avatar.data)
        #expect(output.format == .jpeg)
        #expect(!output.fields.contains("exif-data"))
        #expect(output.iccProfile.flatMap(iccDescription)?.contains("sRGB") == true)
        let png = try decode(render(path).avatar.data).raster
        #expect(output.raster.meanAbsoluteDifference(png) < 3)
    }

    @Test("poses and rectangles relative to a reference thumbnail")
    func references() throws {
        let path = "orientation/Landscape_1.jpg"
        let size = try renderer().probe(Corpus.bytes(path)).header.orientedSize
        // Half-size reference: the square doubles on the source.
        let reference = PixelSize(width: size.width / 2, height: size.height / 2)
        let side = size.height * 2 / 5
        let rect = try render(path, input: .rect(PixelRect(x: 0, y: 0, side: Double(side)), reference: reference))
        #expect(rect.plan.pixelCrop == PixelCrop(x: 0, y: 0, side: 2 * side))
        let direct = try render(path, input: .rect(PixelRect(x: 0, y: 0, side: Double(2 * side)), reference: nil))
        #expect(try decode(rect.avatar.data).raster.meanAbsoluteDifference(decode(direct.avatar.data).raster) < 1)
        // The centred crop differs from the top-left one (the input is actually used).
        let centred = try render(path)
        #expect(try decode(centred.avatar.data).raster.meanAbsoluteDifference(decode(direct.avatar.data).raster) > 10)

        let bytes = try Corpus.bytes(path)
        let pose = CropInput.pose(EditorPose(scale: 1), reference: PixelSize(width: 1000, height: 1000))
        do {
            _ = try renderer().render(bytes, input: pose, options: RenderOptions())
            Issue.record("aspect mismatch accepted")
        } catch {
            #expect(error.code == .aspectMismatch)
        }
    }

    @Test("one probe serves the render (full or fallback); its time is the render's probe time, counted once")
    func probedOnce() throws {
        let renderer = renderer()
        let probed = try renderer.probe(Corpus.bytes("orientation/Landscape_6.jpg"))
        #expect(probed.header.orientation == 6)
        let full = try renderer.render(probed, input: .centred, options: RenderOptions())
        let fallback = try renderer.render(probed, input: .centred, options: RenderOptions(), fallback: true)
        #expect(full.header == probed.header && fallback.header == probed.header)
        #expect(!full.fallbackUsed && fallback.fallbackUsed)
        for result in [full, fallback] {
            #expect(result.timings.probe == probed.probeTime)
            #expect(result.timings.probe > .zero)
            #expect(result.timings.render > .zero && result.timings.encode > .zero)
            #expect(result.timings.total == result.timings.probe + result.timings.render + result.timings.encode)
        }
    }

    @Test("concurrent renders on Dispatch threads keep their results and errors apart")
    func concurrent() throws {
        var named = Corpus.existing([
            "orientation/Landscape_3.jpg", "bad/truncated_image_640x480.png", "colour/cmyk_no-profile_channel.jpg",
            "bad/truncated_10000-bytes-of-2725x2225.jpg", "formats/webp_lossy_gallery-4_1024x772.webp",
            "colour/rgba_blackbug_2048x1536.png", "bad/bomb_20000x20000_1bit-grey.png", "orientation/Landscape_8.jpg",
            "size/craft-beer_319x479.jpg",
        ])
        var photos = try named.map { try Corpus.bytes($0) }
        // A cut-off JPEG, so that errors come from the decoder too, not only from the header.
        let cut = try Corpus.bytes("colour/p3_displayp3-v4_craft-beer.jpg")
        photos.append(Array(cut.prefix(cut.count / 3)))
        named.append("p3 cut to a third")
        let (paths, inputs) = (named, photos)
        let expected = inputs.map(Self.outcome)
        let results = Results(count: paths.count * 3)
        DispatchQueue.concurrentPerform(iterations: paths.count * 3) { index in
            results.set(index, Self.outcome(inputs[index % paths.count]))
        }
        for index in 0..<(paths.count * 3) {
            #expect(results.get(index) == expected[index % paths.count], "\(paths[index % paths.count])")
        }
    }
}

extension CorpusRenderTests {
    /// The avatar's byte count, or the error code.
    static func outcome(_ bytes: [UInt8]) -> String {
        do {
            let result = try renderer().render(bytes, input: .centred, options: RenderOptions())
            return "ok \(result.avatar.data.count)"
        } catch {
            return error.code.rawValue
        }
    }
}

/// Collects results from concurrent threads.
private final class Results: @unchecked Sendable {
    // @unchecked Sendable: every access holds `lock`.
    private let lock = DispatchSemaphore(value: 1)
    private var values: [String]

    init(count: Int) { values = Array(repeating: "", count: count) }

    func set(_ index: Int, _ value: String) {
        lock.wait()
        values[index] = value
        lock.signal()
    }

    func get(_ index: Int) -> String {
        lock.wait()
        defer { lock.signal() }
        return values[index]
    }
}
