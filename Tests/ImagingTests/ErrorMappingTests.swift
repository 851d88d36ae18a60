import CropGeometry
import Testing

@testable import Imaging

@Suite("Errors and options")
struct ErrorMappingTests {
    /// The user's sentence belongs to the wire code the worker maps to (`CropErrorCode.userMessage`,
    /// docs/ARCHITECTURE.md §3): an imaging error carries a code and diagnostic detail, nothing to show a user.
    @Test("an imaging error is a code and diagnostic detail only, no user message of its own")
    func noUserMessage() {
        let labels = Mirror(reflecting: ImagingError(.tooSmall, detail: "160x120")).children.compactMap(\.label)
        #expect(labels == ["code", "detail"])
    }

    @Test("description is the code only; debugDescription adds the detail")
    func descriptions() {
        let error = ImagingError(.decodeFailed, detail: "VipsJpeg: Premature end of input file")
        #expect(error.description == "ImagingError(decode_failed)")
        #expect(error.debugDescription.contains("Premature end"))
        #expect(!error.description.contains("Premature"))
    }

    @Test("only out of memory and cancellation are transient")
    func transient() {
        let codes: [ImagingError.Code] = [
            .decodeFailed, .unsupportedFormat, .tooLarge, .tooManyPixels, .tooSmall, .processingFailed,
            .aspectMismatch, .invalidRequest,
        ]
        for code in codes { #expect(!ImagingError(code).isTransient) }
        #expect(ImagingError(.outOfMemory).isTransient)
        #expect(ImagingError(.cancelled).isTransient)
    }

    @Test("libvips memory failures are recognised at any stage")
    func outOfMemory() {
        let memory = [
            "vips_malloc: out of memory --- size == 2GB", "vips_tracked_malloc: out of memory", "Out of memory",
        ]
        for message in memory {
            let failure = VipsFailure(operation: "copy_memory", message: message)
            #expect(failure.isOutOfMemory)
            #expect(ImagingError.decoding(failure).code == .outOfMemory)
            #expect(ImagingError.processing(failure).code == .outOfMemory)
        }
        let damaged = VipsFailure(operation: "copy_memory", message: "VipsJpeg: Premature end of input file")
        #expect(!damaged.isOutOfMemory)
        #expect(ImagingError.decoding(damaged).code == .decodeFailed)
        #expect(ImagingError.processing(damaged).code == .processingFailed)
    }

    @Test("geometry errors map to request codes")
    func geometry() {
        #expect(ImagingError.geometry(CropGeometryError(.aspectMismatch, "")).code == .aspectMismatch)
        #expect(ImagingError.geometry(CropGeometryError(.invalidPose, "")).code == .invalidRequest)
        #expect(ImagingError.geometry(CropGeometryError(.invalidSize, "")).code == .invalidRequest)
        #expect(ImagingError.geometry(CropGeometryError(.invalidSettings, "")).code == .invalidRequest)
    }

    @Test("a decoder's security-limit refusal is permanent (too many pixels), never out of memory")
    func securityLimit() {
        let heif = VipsFailure(
            operation: "heifload_buffer",
            message: "heifload: Memory allocation error: Security limit exceeded: Image size 17000x17000 exceeds "
                + "the maximum image size 16384x16384")
        #expect(heif.isSecurityLimit)
        #expect(!heif.isOutOfMemory)
        #expect(ImagingError.decoding(heif).code == .tooManyPixels)
        #expect(ImagingError.processing(heif).code == .tooManyPixels)
        #expect(!ImagingError.decoding(heif).isTransient)
        let memory = VipsFailure(operation: "jpegload_buffer", message: "vips_tracked_malloc: out of memory")
        #expect(ImagingError.decoding(memory).code == .outOfMemory)
    }

    @Test("options are validated")
    func options() {
        #expect(throws: Never.self) { try RenderOptions().validate() }
        func code(_ options: RenderOptions) -> ImagingError.Code? {
            do { try options.validate() } catch { return error.code }
            return nil
        }
        #expect(code(RenderOptions(jpegQuality: 0)) == .invalidRequest)
        #expect(code(RenderOptions(extraSizes: [0])) == .invalidRequest)
        #expect(code(RenderOptions(extraSizes: [5000])) == .invalidRequest)
        #expect(code(RenderOptions(fallbackLongEdge: 100)) == .invalidRequest)
    }

    @Test("background colours parse from #RRGGBB")
    func colours() {
        #expect(RGBColor(hex: "#FFFFFF") == .white)
        #expect(RGBColor(hex: "#102030") == RGBColor(r: 0x10, g: 0x20, b: 0x30))
        #expect(RGBColor(hex: "#12345") == nil)
        #expect(RGBColor(hex: "#GG0000") == nil)
    }
}
