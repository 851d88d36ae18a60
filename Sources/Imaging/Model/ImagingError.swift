import CropGeometry

/// Why an image could not be probed or rendered. Switch on `code`; log `description` (the code only, safe
/// anywhere); `debugDescription` adds libvips' text. The sentence a user sees is not here: it belongs to the
/// wire code the worker maps this code to (`CropErrorCode.userMessage`, docs/ARCHITECTURE.md §3).
public struct ImagingError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public struct Code: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The bytes are a supported format but cannot be decoded (corrupt, truncated).
        public static let decodeFailed = Code(rawValue: "decode_failed")
        /// Not an image, or a format avatars do not accept (SVG, PDF, ...).
        public static let unsupportedFormat = Code(rawValue: "unsupported_format")
        /// More bytes than `ImageLimits.maxBytes`.
        public static let tooLarge = Code(rawValue: "too_large")
        /// More pixels than `ImageLimits.maxPixels` (decompression bombs).
        public static let tooManyPixels = Code(rawValue: "too_many_pixels")
        /// A JPEG with more scans than `ImageLimits.maxJPEGScans` (its decode would cost many
        /// times a normal one's CPU, inside one uninterruptible libjpeg call).
        public static let tooManyScans = Code(rawValue: "too_many_scans")
        /// The shorter side is below `ImageLimits.minSide`.
        public static let tooSmall = Code(rawValue: "too_small")
        /// libvips failed after decoding (colour conversion, resize, encode).
        public static let processingFailed = Code(rawValue: "processing_failed")
        /// libvips could not allocate memory (transient).
        public static let outOfMemory = Code(rawValue: "out_of_memory")
        /// The caller cancelled the render (`RenderCancellation`, e.g. at the job's deadline); the
        /// worker reports it as `TIMEOUT` (transient).
        public static let cancelled = Code(rawValue: "cancelled")
        /// The pose's reference size does not have the source's aspect ratio.
        public static let aspectMismatch = Code(rawValue: "aspect_mismatch")
        /// The request (pose, settings, options) is not usable.
        public static let invalidRequest = Code(rawValue: "invalid_request")
    }

    public var code: Code
    /// Diagnostic text (libvips' message, the failing operation). No user data: inputs are buffers.
    public internal(set) var detail: String

    /// `detail` is diagnostic text only (a render helper's error crosses its channel as code and detail).
    public init(_ code: Code, detail: String = "") {
        self.code = code
        self.detail = detail
    }

    /// Only `outOfMemory` (on the thumbnail-resolution fallback) and `cancelled` (with more time)
    /// may succeed when retried.
    public var isTransient: Bool { code == .outOfMemory || code == .cancelled }

    public var description: String { "ImagingError(\(code.rawValue))" }

    public var debugDescription: String {
        detail.isEmpty ? description : "ImagingError(\(code.rawValue)): \(detail)"
    }
}

extension ImagingError {
    /// A libvips failure at a stage where the input's pixels were being read.
    static func decoding(_ failure: VipsFailure) -> ImagingError {
        ImagingError(classify(failure, otherwise: .decodeFailed), detail: "\(failure.operation): \(failure.message)")
    }

    /// A libvips failure while building operations or encoding already-decoded pixels.
    static func processing(_ failure: VipsFailure) -> ImagingError {
        ImagingError(
            classify(failure, otherwise: .processingFailed), detail: "\(failure.operation): \(failure.message)")
    }

    /// A decoder's security-limit refusal is a permanent `tooManyPixels` (checked first: libheif words
    /// it as a memory allocation error); a failed allocation is the transient `outOfMemory`.
    private static func classify(_ failure: VipsFailure, otherwise code: Code) -> Code {
        if failure.isSecurityLimit { return .tooManyPixels }
        if failure.isOutOfMemory { return .outOfMemory }
        return code
    }

    static func geometry(_ error: CropGeometryError) -> ImagingError {
        switch error.code {
        case .aspectMismatch: ImagingError(.aspectMismatch, detail: error.message)
        case .invalidPose, .invalidSize, .invalidSettings: ImagingError(.invalidRequest, detail: error.message)
        }
    }
}
