import CropGeometry
import Testing

@testable import Imaging

@Suite("Memory admission")
struct MemoryAdmissionTests {
    let estimate = MemoryEstimate(fullResolution: 300, fallback: 100)

    @Test("full resolution when it fits next to what is reserved")
    func full() {
        #expect(MemoryAdmission.decide(estimate: estimate, budget: 1000, reserved: 0) == .fullResolution(reserve: 300))
        #expect(
            MemoryAdmission.decide(estimate: estimate, budget: 1000, reserved: 700) == .fullResolution(reserve: 300))
    }

    @Test("fallback when only the fallback fits")
    func fallback() {
        #expect(MemoryAdmission.decide(estimate: estimate, budget: 1000, reserved: 701) == .fallback(reserve: 100))
        #expect(MemoryAdmission.decide(estimate: estimate, budget: 1000, reserved: 900) == .fallback(reserve: 100))
    }

    @Test("wait when nothing fits and others hold memory")
    func wait() {
        #expect(MemoryAdmission.decide(estimate: estimate, budget: 1000, reserved: 901) == .wait)
    }

    @Test("a job larger than the whole budget still runs, on the fallback, when nothing else is reserved")
    func noDeadlock() {
        #expect(MemoryAdmission.decide(estimate: estimate, budget: 50, reserved: 0) == .fallback(reserve: 100))
        #expect(MemoryAdmission.decide(estimate: estimate, budget: 200, reserved: 0) == .fallback(reserve: 100))
        #expect(MemoryAdmission.decide(estimate: estimate, budget: 50, reserved: 1) == .wait)
    }

    static func header(
        _ format: ImageFormat, _ width: Int, _ height: Int, interlaced: Bool = false, bands: Int = 3, depth: Int = 8
    ) -> ImageHeader {
        ImageHeader(
            format: format, storedSize: PixelSize(width: width, height: height), orientation: 1, bands: bands,
            hasAlpha: bands == 4, bitDepth: depth, interpretation: "srgb", hasICCProfile: false,
            interlaced: interlaced, byteCount: 1_000_000)
    }

    func estimate(_ header: ImageHeader, _ options: RenderOptions = RenderOptions(), input: CropInput? = nil)
        -> MemoryEstimate
    {
        MemoryAdmission.estimate(header: header, options: options, input: input, threads: 2)
    }

    @Test("whole-frame decoders cost more than streaming ones")
    func wholeFrame() {
        let baseline = estimate(Self.header(.jpeg, 6000, 4000))
        let progressive = estimate(Self.header(.jpeg, 6000, 4000, interlaced: true))
        #expect(progressive.fullResolution > baseline.fullResolution + 6000 * 4000 * 3)
        let heif = estimate(Self.header(.heif, 4032, 3024))
        #expect(heif.fullResolution > 4032 * 3024 * 6)
        let png = estimate(Self.header(.png, 4032, 3024))
        let interlacedPNG = estimate(Self.header(.png, 4032, 3024, interlaced: true))
        #expect(interlacedPNG.fullResolution > png.fullResolution)
    }

    @Test("only JPEG and WebP get a cheaper fallback")
    func fallbackCheaper() {
        let jpeg = estimate(Self.header(.jpeg, 8000, 6000))
        #expect(jpeg.fallback < jpeg.fullResolution)
        let webp = estimate(Self.header(.webp, 8000, 6000))
        #expect(webp.fallback < webp.fullResolution)
        for format in [ImageFormat.heif, .png, .gif, .tiff] {
            let other = estimate(Self.header(format, 8000, 6000))
            #expect(other.fallback == other.fullResolution)
        }
    }

    @Test("larger images, extra sizes and zoomed-in poses cost more")
    func monotonic() {
        let small = estimate(Self.header(.heif, 2000, 1500))
        let large = estimate(Self.header(.heif, 4000, 3000))
        #expect(large.fullResolution > small.fullResolution)

        let header = Self.header(.jpeg, 6000, 4000)
        let plain = estimate(header)
        let extras = estimate(header, RenderOptions(extraSizes: [1024, 80]))
        #expect(extras.fullResolution > plain.fullResolution)

        // Any pose (nil) assumes the most zoomed-in crop: at least what the centred crop needs.
        let centred = estimate(header, input: .centred)
        #expect(plain.fullResolution >= centred.fullResolution)
        // The centred crop decodes at 1/4; the most zoomed-in one (1000 px) at full size.
        #expect(plain.fullResolution > centred.fullResolution)
    }
}
