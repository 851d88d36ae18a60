import CropGeometry
import Testing

@testable import Imaging

/// Issue 7: whatever a user uploads, the renderer answers at once with a typed, permanent error.
@Suite("Hostile inputs")
struct HostileInputTests {
    /// The code each fixture must end in (SOURCES.md in the fixtures folder says why).
    static let expected: [String: ImagingError.Code] = [
        "svgz_truncated.svgz": .unsupportedFormat,
        "avif_declares-17000x17000.avif": .tooManyPixels,
        "avif_ispe-overflow_4294967295x4294967295.avif": .tooManyPixels,
        "avif_ipma-entry-count-past-end.avif": .decodeFailed,
        "png_header-only-bomb_65535x65535.png": .tooManyPixels,
        "gif_header-only-bomb_65535x65535.gif": .tooManyPixels,
        "jpeg_header-only-bomb_65500x65500.jpg": .tooManyPixels,
        "webp_header-only-bomb_16384x16384.webp": .tooManyPixels,
        "html_404-named.jpg": .unsupportedFormat,
        "zero-byte.jpg": .unsupportedFormat,
        "jpeg_progressive-253-scans.jpg": .tooManyScans,
        "heic_grid-tile-not-an-image.heic": .decodeFailed,
    ]

    static func outcome(_ bytes: [UInt8], renderer: AvatarRenderer = renderer()) -> ImagingError? {
        do {
            _ = try renderer.render(bytes, input: .centred, options: RenderOptions())
            return nil
        } catch {
            return error
        }
    }

    @Test("every fixture has an expected answer")
    func everyFixtureListed() throws {
        #expect(try Hostile.names() == Self.expected.keys.sorted())
    }

    @Test("each fixture ends in its code, well within a hang guard", arguments: Self.expected.keys.sorted())
    func answers(name: String) throws {
        let bytes = try Hostile.bytes(name)
        guard let error = withHangGuard(name, { Self.outcome(bytes) }) else { return }
        #expect(error?.code == Self.expected[name], "\(name): \(error?.debugDescription ?? "rendered")")
        #expect(error?.isTransient == false)
    }

    @Test("header-only bombs are refused from the bytes, before libvips opens them")
    func refusedBeforeLibvips() throws {
        for name in Self.expected.keys.sorted() where Self.expected[name] == .tooManyPixels {
            let error = try #require(Self.outcome(try Hostile.bytes(name)))
            #expect(error.detail.hasPrefix("header declares"), "\(name): \(error.debugDescription)")
        }
    }

    /// docs/ARCHITECTURE.md §7: every scan of a progressive JPEG is another pass over the whole
    /// coefficient buffer inside one libjpeg call, which no deadline can stop; the header check
    /// counts scans and refuses more than `ImageLimits.maxJPEGScans` before libjpeg starts.
    @Test(
        "a progressive JPEG with more scans than the limit is refused from its bytes; under a higher limit it renders")
    func manyScans() throws {
        let bytes = try Hostile.bytes("jpeg_progressive-253-scans.jpg")
        let error = try #require(Self.outcome(bytes))
        #expect(error.code == .tooManyScans)
        #expect(error.detail.hasPrefix("JPEG with more than \(ImageLimits().maxJPEGScans) scans"))
        // The fixture is a sound image (it decodes to the same pixels as its baseline source):
        // the refusal is the limit's, nothing else's.
        let lenient = AvatarRenderer(limits: ImageLimits(maxJPEGScans: 300), logger: testLogger)
        let rendered = Self.outcome(bytes, renderer: lenient).map(\.debugDescription)
        #expect(rendered == nil)
    }

    /// Finding 8: with the container check out of the way (a pixel limit above 17000²), libheif
    /// itself refuses the file with "Memory allocation error: Security limit exceeded", which used
    /// to be reported as out of memory (transient, so replayed forever).
    @Test("libheif's security-limit refusal is too many pixels, not out of memory")
    func libheifRefusal() throws {
        let lenient = AvatarRenderer(limits: ImageLimits(maxPixels: 400_000_000), logger: testLogger)
        let error = try #require(Self.outcome(try Hostile.bytes("avif_declares-17000x17000.avif"), renderer: lenient))
        #expect(error.detail.contains("Security limit"), "\(error.debugDescription)")
        #expect(error.code == .tooManyPixels)
        #expect(!error.isTransient)
    }

    /// Files whose header is sound and whose damage only a decode meets: the probe accepts them and
    /// chooses libvips, because the HEIF region decoder refused the layout (its grid has a tile that is
    /// not an image, on which libheif's tile API would crash); the render then fails.
    static let refusedAtDecode: Set<String> = ["heic_grid-tile-not-an-image.heic"]

    @Test("probe gives the same answers as render", arguments: Self.expected.keys.sorted())
    func probe(name: String) throws {
        let bytes = try Hostile.bytes(name)
        let probed = withHangGuard(name) { () -> Result<DecoderPath, ImagingError> in
            Result { () throws(ImagingError) in try renderer().probe(bytes).header.decoder }
        }
        guard let probed else { return }
        switch probed {
        case .success(let decoder):
            #expect(Self.refusedAtDecode.contains(name), "\(name) was accepted by the probe")
            #expect(decoder == .libvips(.header), "\(name): \(decoder)")
        case .failure(let error):
            #expect(!Self.refusedAtDecode.contains(name), "\(name): \(error.debugDescription)")
            #expect(error.code == Self.expected[name], "\(name)")
        }
    }

    @Test("every file of the corpus' bad/ folder answers, well within a hang guard", .enabled(if: Corpus.large != nil))
    func corpusBad() throws {
        for path in try Corpus.files(in: "bad") {
            let bytes = try Corpus.bytes(path)
            _ = withHangGuard(path) { Self.outcome(bytes) }
        }
    }
}
