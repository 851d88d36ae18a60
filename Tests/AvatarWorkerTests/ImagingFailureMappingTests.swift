import CropProtocol
import Imaging
import Logging
import Testing

@testable import AvatarWorker

/// How the renderer's errors become result codes (issue 7): a cancelled render is the job's
/// deadline, `TIMEOUT`.
@Suite("Imaging errors as job failures")
struct ImagingFailureMappingTests {
    @Test("every accepted format has its own name in the metrics, the renderer's name for it")
    func sourceFormats() {
        let names = ImageFormat.allCases.map { SourceImageFormat($0) }
        #expect(Set(names).count == ImageFormat.allCases.count)
        for format in ImageFormat.allCases {
            #expect(SourceImageFormat(format).rawValue == format.rawValue)
        }
    }

    @Test("a render stopped by its cancellation is TIMEOUT (transient)")
    func cancelledIsTimeout() throws {
        let renderer = AvatarRenderer(logger: Logger(label: "test.imaging") { _ in SwiftLogNoOpLogHandler() })
        let cancellation = RenderCancellation()
        cancellation.cancel()
        do {
            _ = try renderer.probe([0xFF, 0xD8, 0xFF], cancellation: cancellation)
            Issue.record("a cancelled probe ran")
        } catch {
            #expect(error.code == .cancelled)
            let failure = JobFailure(error)
            #expect(failure.code == .timeout)
            #expect(failure.errorClass == .transient)
        }
    }

    /// docs/ARCHITECTURE.md §7: a JPEG refused for its scan count is TOO_LARGE (too much work), permanent.
    @Test("a JPEG with too many scans is TOO_LARGE (permanent)")
    func tooManyScansIsTooLarge() throws {
        let renderer = AvatarRenderer(
            limits: ImageLimits(maxJPEGScans: 2),
            logger: Logger(label: "test.imaging") { _ in SwiftLogNoOpLogHandler() })
        // SOI and three empty SOS segments: counted from the bytes, before libjpeg reads anything.
        let scan: [UInt8] = [0xFF, 0xDA, 0x00, 0x02]
        do {
            _ = try renderer.probe([0xFF, 0xD8] + scan + scan + scan + [0xFF, 0xD9])
            Issue.record("a JPEG with three scans passed a limit of two")
        } catch {
            #expect(error.code == .tooManyScans)
            let failure = JobFailure(error)
            #expect(failure.code == .tooLarge)
            #expect(failure.errorClass == .permanent)
            #expect(failure.userMessage == CropErrorCode.tooLarge.userMessage)
        }
    }

    /// The worker and `avatar-cropper crop` take the user's sentence from the same mapping and the one table.
    @Test("every imaging code maps to one wire code, whose sentence the job failure carries")
    func everyImagingCode() {
        let expected: [(ImagingError.Code, CropErrorCode)] = [
            (.decodeFailed, .decodeFailed), (.unsupportedFormat, .unsupportedFormat), (.tooLarge, .tooLarge),
            (.tooManyPixels, .tooManyPixels), (.tooManyScans, .tooLarge), (.tooSmall, .tooSmall),
            (.processingFailed, .processingFailed), (.outOfMemory, .outOfMemory), (.cancelled, .timeout),
            (.aspectMismatch, .aspectMismatch), (.invalidRequest, .invalidRequest),
        ]
        for (imaging, wire) in expected {
            #expect(CropErrorCode(imaging) == wire, "\(imaging)")
        }
        #expect(
            CropErrorCode(ImagingError.Code.tooSmall).userMessage == "This photo is too small for a profile picture")
    }
}
