import CropGeometry
import Testing

@_spi(Benchmark) @testable import Imaging

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

    /// A header as `HeaderReader` makes it for such a file: the decoder `DecoderSelection.fileDecoder`
    /// gives (a baseline JPEG's is the region decoder; a HEIF stands for one libheif declined).
    static func header(
        _ format: ImageFormat, _ width: Int, _ height: Int, interlaced: Bool = false, bands: Int = 3, depth: Int = 8,
        interpretation: String = "srgb"
    ) -> ImageHeader {
        let size = PixelSize(width: width, height: height)
        let jpeg = JPEGRegionDecoder.Header(
            size: size, components: bands == 4 ? 4 : bands == 1 ? 1 : 3,
            colour: bands == 4 ? .cmyk : bands == 1 ? .grey : .yCbCr, multiScan: interlaced, arithmeticCoding: false,
            precision: depth, adobeTransform: nil, maxHorizontalSampling: 2)
        return ImageHeader(
            format: format, storedSize: size, orientation: 1, bands: bands, hasAlpha: bands == 4, bitDepth: depth,
            interpretation: interpretation, hasICCProfile: false, interlaced: interlaced, byteCount: 1_000_000,
            decoder: DecoderSelection.fileDecoder(format: format, size: size, jpeg: jpeg))
    }

    static let libvips = {
        var options = RenderOptions()
        options.decoderPreference = .libvips
        return options
    }()

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

    // MARK: - The JPEG region decoder

    @Test("on the region decoder the estimate holds the region, not libvips' rows of the whole width")
    func regionInsteadOfRows() {
        // 24 MP, a 1000 px crop (the most zoomed-in pose) decoded at full size: libvips' 256-row line
        // cache of 6000 px rows (4.6 MB) against a 1000 × 1000 region (3 MB).
        let header = Self.header(.jpeg, 6000, 4000)
        let input = CropInput.rect(PixelRect(x: 3000, y: 2000, side: 1000), reference: nil)
        let region = estimate(header, input: input)
        let libvips = estimate(header, Self.libvips, input: input)
        #expect(region.fullResolution < libvips.fullResolution)
        #expect(libvips.fullResolution - region.fullResolution == 6000 * 3 * 256 - 1000 * 1000 * 3)
        // libvips' formula is unchanged where the region decoder does not run.
        for other in [
            Self.header(.jpeg, 8064, 6048, interlaced: true), Self.header(.png, 8064, 6048),
            Self.header(.jpeg, 8064, 6048, bands: 4, interpretation: "cmyk"),
        ] {
            #expect(estimate(other, input: input) == estimate(other, Self.libvips, input: input))
        }
    }

    @Test("the region estimate grows with the region")
    func regionGrows() {
        let header = Self.header(.jpeg, 6000, 4000)
        // All decoded at full size (crops under 1024 px).
        let sides = [1000.0, 1010, 1020]
        let estimates = sides.map {
            estimate(header, input: .rect(PixelRect(x: 100, y: 100, side: $0), reference: nil)).fullResolution
        }
        #expect(estimates[0] < estimates[1] && estimates[1] < estimates[2])
        let third = (1020 * 1020 - 1010 * 1010) * 3 + 2 * (1020 - 1010) * 4 * 4 * MemoryAdmission.pipelineRows
        #expect(estimates[2] - estimates[1] == third)
    }

    @Test("with no pose given, the region estimate covers every pose")
    func anyPoseBound() {
        let headers = [
            Self.header(.jpeg, 8064, 6048), Self.header(.jpeg, 6000, 4000), Self.header(.jpeg, 4032, 3024),
            Self.header(.jpeg, 1350, 900), Self.header(.jpeg, 6000, 771), Self.header(.jpeg, 3000, 3000, bands: 1),
        ]
        let optionSets = [RenderOptions(), RenderOptions(extraSizes: [1024]), RenderOptions(extraSizes: [80, 2048])]
        for header in headers {
            let size = header.orientedSize
            let short = Double(min(size.width, size.height))
            for options in optionSets {
                let bound = estimate(header, options)
                var inputs: [CropInput] = [.centred]
                for fraction in stride(from: 0.05, through: 1.0, by: 0.05) {
                    let side = (short * fraction).rounded(.down)
                    inputs.append(.rect(PixelRect(x: 0, y: 0, side: side), reference: nil))
                    inputs.append(
                        .rect(
                            PixelRect(x: Double(size.width) - side, y: Double(size.height) - side, side: side),
                            reference: nil))
                }
                for input in inputs {
                    let pose = estimate(header, options, input: input)
                    #expect(
                        pose.fullResolution <= bound.fullResolution,
                        "\(header.storedSize) \(options.extraSizes) \(input): \(pose) > \(bound)")
                    #expect(pose.fallback <= bound.fallback, "\(header.storedSize) \(input): fallback")
                }
            }
        }
    }

    @Test("a region too large to hold (a 4096 px extra size at full scale) is estimated as libvips streams it")
    func largeRegion() {
        let header = Self.header(.jpeg, 6000, 6000)
        let options = RenderOptions(extraSizes: [4096])
        // The whole 6000 px square at 1/1 (6000 / 2 < 4096): 36 MP, over the region limit.
        var forced = options
        forced.decoderPreference = .libvips
        #expect(
            estimate(header, options, input: .centred).fullResolution
                == estimate(header, forced, input: .centred).fullResolution)
        // A 4096 px crop at 1/1 fits: estimated as a region.
        let fits = CropInput.rect(PixelRect(x: 0, y: 0, side: 4096), reference: nil)
        #expect(
            estimate(header, options, input: fits).fullResolution
                != estimate(header, forced, input: fits).fullResolution)
    }

    @Test("the fallback's region is smaller still")
    func regionFallback() {
        let header = Self.header(.jpeg, 6000, 4000)
        let input = CropInput.rect(PixelRect(x: 100, y: 100, side: 1000), reference: nil)
        let region = estimate(header, input: input)
        // 1000 px at 1/2 (the fallback's long edge: 6000 / 2 = 3000 ≤ 3200): 500 px.
        #expect(region.fallback < region.fullResolution)
        #expect(
            region.fallback
                == MemoryAdmission.regionBytes(
                    header: header, factor: 2, regionSide: 500, options: RenderOptions(), threads: 2))
    }
}
