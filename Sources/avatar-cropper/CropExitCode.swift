import Imaging

/// Exit codes of `avatar-cropper crop`, one per failure class (listed in `crop --help`).
enum CropExitCode {
    static let unsupportedFormat: Int32 = 10
    static let decodeFailed: Int32 = 11
    static let tooLarge: Int32 = 12
    static let tooManyPixels: Int32 = 13
    static let tooSmall: Int32 = 14
    static let aspectMismatch: Int32 = 15
    static let invalidRequest: Int32 = 16
    static let processingFailed: Int32 = 20
    static let outOfMemory: Int32 = 21
    static let io: Int32 = 30

    static func forCode(_ code: ImagingError.Code) -> Int32 {
        switch code {
        case .unsupportedFormat: unsupportedFormat
        case .decodeFailed: decodeFailed
        case .tooLarge, .tooManyScans: tooLarge
        case .tooManyPixels: tooManyPixels
        case .tooSmall: tooSmall
        case .aspectMismatch: aspectMismatch
        case .invalidRequest: invalidRequest
        case .outOfMemory: outOfMemory
        default: processingFailed
        }
    }

    static let help = """
        Exit codes: 0 success; 10 unsupported format; 11 decode failed (damaged file); 12 file too large (or a JPEG with too many scans); \
        13 too many pixels; 14 too small; 15 pose does not match the image's aspect ratio; 16 invalid \
        request; 20 processing failed; 21 out of memory; 30 cannot read the input or write the output; \
        64 invalid command line.
        """
}
