import CropGeometry
import Dispatch
import Foundation
import Testing

@_spi(Benchmark) @testable import Imaging

/// `RenderCancellation`: the worker's deadline stops a render, including libvips' evaluation
/// (through its kill flag), and the render ends with `.cancelled`.
@Suite("Render cancellation")
struct RenderCancellationTests {
    /// A 6000×6000 noise JPEG (36 MP): a decode of a few seconds on a loaded machine, in strips of
    /// rows libvips can stop between. Made once, in memory.
    static let large: [UInt8] = {
        let (width, height) = (6000, 6000)
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        pixels.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for index in words.indices {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                words[index] = state
            }
        }
        do {
            try Vips.initialise()
            return try VImage.fromPixels(pixels, width: width, height: height, bands: 3).jpegData(
                quality: 90, strip: true)
        } catch {
            return []
        }
    }()

    static let renderer = AvatarRenderer(
        limits: ImageLimits(maxBytes: 512 * 1024 * 1024, maxPixels: 100_000_000), logger: testLogger)

    /// The whole image as the crop and a large master (extra size 2048): the JPEG is decoded at
    /// half size (shrink-on-load 2 keeps 3000 ≥ 2048 pixels), every row of it. A baseline JPEG:
    /// the region decoder's unless libvips is forced.
    static let options = RenderOptions(extraSizes: [2048])

    static let libvipsOptions = {
        var options = Self.options
        options.decoderPreference = .libvips
        return options
    }()

    static func outcome(
        _ cancellation: RenderCancellation, bytes: [UInt8] = large, options: RenderOptions = options
    ) -> ImagingError? {
        do {
            _ = try renderer.render(bytes, input: .centred, options: options, cancellation: cancellation)
            return nil
        } catch {
            return error
        }
    }

    @Test("a cancellation made before the render stops it at once")
    func cancelledBefore() throws {
        let cancellation = RenderCancellation()
        cancellation.cancel()
        #expect(cancellation.isCancelled)
        #expect(Self.outcome(cancellation)?.code == .cancelled)
        do {
            _ = try Self.renderer.probe(Self.large, cancellation: cancellation)
            Issue.record("probe ran")
        } catch {
            #expect(error.code == .cancelled)
        }
    }

    /// Deterministic proof that the kill flag stops libvips: cancel() runs as the evaluation is
    /// about to start, past every check in Swift, so only libvips can notice it.
    @Test("cancel() at the start of libvips' evaluation stops the evaluation (the kill flag)")
    func killFlagStopsTheEvaluation() throws {
        let cancellation = RenderCancellation(onWatch: { $0.cancel() })
        let error = try #require(Self.outcome(cancellation, options: Self.libvipsOptions))
        #expect(error.code == .cancelled)
        #expect(error.detail.contains("decode stopped"), "\(error.debugDescription)")
        #expect(error.detail.contains("killed"), "\(error.debugDescription)")
    }

    /// The same for the JPEG region decoder: cancel() runs past Swift's last check, so only the
    /// decoder's own poll of its flag can notice.
    @Test("cancel() at the start of a JPEG region decode stops the decode (its flag)")
    func flagStopsTheRegionDecode() throws {
        let cancellation = RenderCancellation(onWatch: { $0.cancel() })
        let error = try #require(Self.outcome(cancellation))
        #expect(error.code == .cancelled)
        #expect(error.detail.contains("decode stopped"), "\(error.debugDescription)")
        #expect(error.detail.contains("jpeg region decode cancelled"), "\(error.debugDescription)")
    }

    @Test(
        "cancelling from another thread during a large render ends it with .cancelled (both decoders)",
        arguments: [false, true])
    func cancelFromAnotherThread(forceLibvips: Bool) throws {
        let started = DispatchSemaphore(value: 0)
        let cancellation = RenderCancellation(onWatch: { _ in started.signal() })
        Thread {
            // As soon as the 36 MP decode starts (libvips' evaluation, or the region decode).
            started.wait()
            cancellation.cancel()
        }.start()
        let options = forceLibvips ? Self.libvipsOptions : Self.options
        let error = withHangGuard(seconds: 60, "the cancelled render") {
            Self.outcome(cancellation, options: options)
        }
        #expect(error??.code == .cancelled, "\(String(describing: error))")
        #expect(error??.isTransient == true)
    }

    @Test("the same render without a cancellation succeeds (what the cancellation stopped was real work)")
    func uncancelledRenders() throws {
        #expect(Self.large.count > 1_000_000)
        for options in [Self.options, Self.libvipsOptions] {
            let result = try Self.renderer.render(
                Self.large, input: .centred, options: options, cancellation: RenderCancellation())
            #expect(result.decodeSize == PixelSize(width: 3000, height: 3000))
            #expect(result.extras.first?.size == 2048)
            #expect(result.decoder == (options == Self.options ? .jpegRegion : .libvips(.requested)))
        }
    }
}
