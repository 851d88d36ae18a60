import Foundation

/// Why a crop message could not be read or is not acceptable.
///
/// `description` is safe to log: it names fields and rules, never ids, keys or other values
/// taken from the message. Details (such as the decoder's own error) are in `debugDescription`.
public struct ProtocolError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    public enum Code: Sendable, Hashable {
        /// The bytes are not a message of the expected type in the announced encoding.
        case malformed
        /// The `content-type` header names an encoding other than protobuf or JSON.
        case unsupportedContentType
        /// `job_id` is missing or not 1–128 characters of `[A-Za-z0-9._:-]`.
        case invalidJobID
        /// `user_id` is missing or not a UUID.
        case invalidUserID
        /// A required field (named as in the .proto file, e.g. "requested_at") is absent.
        case missingField(String)
        /// A field (named as in the .proto file, e.g. "output.size") holds a value outside its range.
        case invalidValue(String)
        /// A message could not be encoded (e.g. a timestamp outside the JSON mapping's range).
        case encodingFailed
    }

    public var code: Code
    /// Why, in words; names fields and rules only, never values from the message.
    public var reason: String
    /// The request's job id when it was read and valid before the failure, so a failure result can name it.
    public var jobID: String?
    /// The request's user id when it was read and valid before the failure.
    public var userID: UUID?
    /// Underlying detail for debugging (e.g. the decoder's error); may quote the message.
    public var detail: String?

    public init(_ code: Code, reason: String, jobID: String? = nil, userID: UUID? = nil, detail: String? = nil) {
        self.code = code
        self.reason = reason
        self.jobID = jobID
        self.userID = userID
        self.detail = detail
    }

    /// The wire error code a failure result and the metrics report for this error.
    public var errorCode: CropErrorCode {
        switch code {
        case .malformed, .unsupportedContentType: .malformedRequest
        case .invalidJobID, .invalidUserID: .invalidID
        case .missingField, .invalidValue: .invalidRequest
        case .encodingFailed: .internal
        }
    }

    /// The sentence the user sees: the wire code's (`CropErrorCode.userMessage`).
    public var userMessage: String { errorCode.userMessage }

    public var description: String {
        let name: String
        switch code {
        case .malformed: name = "malformed"
        case .unsupportedContentType: name = "unsupported_content_type"
        case .invalidJobID: name = "invalid_job_id"
        case .invalidUserID: name = "invalid_user_id"
        case .missingField(let field): name = "missing_field(\(field))"
        case .invalidValue(let field): name = "invalid_value(\(field))"
        case .encodingFailed: name = "encoding_failed"
        }
        return "ProtocolError(\(name)): \(reason)"
    }

    public var debugDescription: String {
        guard let detail else { return description }
        return "\(description) [\(detail)]"
    }
}
