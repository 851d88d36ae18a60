/// Why a job failed: the `ErrorCode` enum of common.proto as a plain Swift enum. The raw value is
/// the string a failure result carries (`CropResult.Failure.error_code`) and the DLQ header value.
public enum CropErrorCode: String, Sendable, Hashable, CaseIterable {
    case decodeFailed = "DECODE_FAILED"
    case unsupportedFormat = "UNSUPPORTED_FORMAT"
    case tooLarge = "TOO_LARGE"
    case tooManyPixels = "TOO_MANY_PIXELS"
    case tooSmall = "TOO_SMALL"
    case processingFailed = "PROCESSING_FAILED"
    case outOfMemory = "OUT_OF_MEMORY"
    case malformedRequest = "MALFORMED_REQUEST"
    case invalidID = "INVALID_ID"
    case aspectMismatch = "ASPECT_MISMATCH"
    case sourceNotFound = "SOURCE_NOT_FOUND"
    case storageUnavailable = "STORAGE_UNAVAILABLE"
    case databaseUnavailable = "DATABASE_UNAVAILABLE"
    case `internal` = "INTERNAL"
    case invalidRequest = "INVALID_REQUEST"
    case timeout = "TIMEOUT"

    /// Whether retrying can help, for this code on its own (a caller may know better, e.g. an
    /// internal error that is known to be deterministic).
    public var defaultClass: CropErrorClass {
        switch self {
        case .decodeFailed, .unsupportedFormat, .tooLarge, .tooManyPixels, .tooSmall, .processingFailed,
            .malformedRequest, .invalidID, .aspectMismatch, .sourceNotFound, .invalidRequest:
            .permanent
        case .outOfMemory, .storageUnavailable, .databaseUnavailable, .internal, .timeout:
            .transient
        }
    }

    /// The sentence the app shows the user for this code: the one table of user-facing error messages
    /// (`CropResult.Failure.user_message`, the DLQ's `error-message` header, `avatar-cropper crop`).
    /// Specific, kind, and says what to do; never technical, never an id. `TOO_SMALL`'s is quoted by the
    /// product contract word for word. Imaging and the other modules keep codes and diagnostic detail only
    /// (docs/ARCHITECTURE.md §3, "Every job ends in a result event").
    public var userMessage: String {
        switch self {
        case .decodeFailed: "This photo could not be read. It may be damaged; please choose another one."
        case .unsupportedFormat:
            "This file type is not supported. Please choose a JPEG, PNG, WebP, HEIC, AVIF, GIF or TIFF photo."
        // Also a JPEG with too many scans (docs/ARCHITECTURE.md §7): too much work, not too many bytes.
        case .tooLarge: "This photo is too large to process. Please choose a smaller one."
        case .tooManyPixels: "This photo has too many pixels to process. Please choose a smaller one."
        case .tooSmall: "This photo is too small for a profile picture"
        case .processingFailed: "This photo could not be processed. Please choose another one."
        case .aspectMismatch: "The crop does not match this photo. Please edit your profile picture again."
        case .invalidRequest: "The crop could not be applied. Please edit your profile picture again."
        case .sourceNotFound: "The uploaded photo could not be found. Please upload it again."
        case .malformedRequest, .invalidID: "Your profile picture could not be updated. Please try again."
        case .outOfMemory: "We are busy right now. Please try again in a moment."
        case .timeout: "This photo took too long to process. Please try again in a moment."
        case .storageUnavailable, .databaseUnavailable, .internal:
            "Your profile picture could not be updated right now. Please try again later."
        }
    }

    /// The generated enum value (for `CropMetrics.error_code`).
    public var wireValue: Avatar_Crop_V1_ErrorCode {
        switch self {
        case .decodeFailed: .decodeFailed
        case .unsupportedFormat: .unsupportedFormat
        case .tooLarge: .tooLarge
        case .tooManyPixels: .tooManyPixels
        case .tooSmall: .tooSmall
        case .processingFailed: .processingFailed
        case .outOfMemory: .outOfMemory
        case .malformedRequest: .malformedRequest
        case .invalidID: .invalidID
        case .aspectMismatch: .aspectMismatch
        case .sourceNotFound: .sourceNotFound
        case .storageUnavailable: .storageUnavailable
        case .databaseUnavailable: .databaseUnavailable
        case .internal: .internal
        case .invalidRequest: .invalidRequest
        case .timeout: .timeout
        }
    }

    /// The code for a generated enum value; `nil` for `.unspecified` and values this build does not know.
    public init?(wireValue: Avatar_Crop_V1_ErrorCode) {
        guard let code = Self.allCases.first(where: { $0.wireValue == wireValue }) else { return nil }
        self = code
    }
}

/// Whether retrying the same request can help.
public enum CropErrorClass: String, Sendable, Hashable, CaseIterable {
    /// The same request fails the same way again (bad image, too small, malformed request).
    case permanent
    /// A dependency failed; a later replay may succeed.
    case transient

    public var wireValue: Avatar_Crop_V1_ErrorClass {
        switch self {
        case .permanent: .permanent
        case .transient: .transient
        }
    }

    public init?(wireValue: Avatar_Crop_V1_ErrorClass) {
        switch wireValue {
        case .permanent: self = .permanent
        case .transient: self = .transient
        case .unspecified, .UNRECOGNIZED: return nil
        }
    }
}
