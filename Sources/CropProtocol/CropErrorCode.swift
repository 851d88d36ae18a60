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

    /// A short message for the app to show the user.
    public var defaultUserMessage: String {
        switch self {
        case .decodeFailed: "This photo could not be read, please choose another one"
        case .unsupportedFormat: "This type of photo is not supported, please choose a JPEG, PNG, HEIC or WebP photo"
        case .tooLarge, .tooManyPixels: "This photo is too large, please choose a smaller one"
        case .tooSmall: "This photo is too small for a profile picture"
        case .processingFailed: "This photo could not be processed, please choose another one"
        case .aspectMismatch: "The crop does not match this photo, please edit it again"
        case .sourceNotFound: "The uploaded photo could not be found, please upload it again"
        case .malformedRequest, .invalidID, .invalidRequest:
            "Your profile picture could not be updated, please try again"
        case .outOfMemory, .storageUnavailable, .databaseUnavailable, .internal, .timeout:
            "Your profile picture could not be updated right now, please try again later"
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
