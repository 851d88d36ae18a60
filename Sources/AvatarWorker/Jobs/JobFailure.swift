import CropProtocol
import Database
import Imaging
import Storage

/// Why a job failed, as the result event, the DLQ headers and the metrics report it:
/// a code, whether retrying can help, what the user is told, and how often it was tried.
public struct JobFailure: Error, Sendable, CustomStringConvertible {
    public var code: CropErrorCode
    public var errorClass: CropErrorClass
    public var attempts: Int
    /// Safe to log: no user ids, keys, paths or image bytes.
    public var detail: String

    public init(
        _ code: CropErrorCode, errorClass: CropErrorClass? = nil, attempts: Int = 1, detail: String
    ) {
        self.code = code
        self.errorClass = errorClass ?? code.defaultClass
        self.attempts = attempts
        self.detail = detail
    }

    /// What the user is told: the code's sentence, from the one table (`CropErrorCode.userMessage`).
    public var userMessage: String { code.userMessage }

    public var description: String { "\(code.rawValue) (\(errorClass.rawValue), attempts \(attempts)): \(detail)" }
}

extension CropErrorCode {
    /// The wire code of a renderer's error: the one mapping from `ImagingError.Code`, used by the worker and
    /// by `avatar-cropper crop` for the user's sentence.
    public init(_ code: ImagingError.Code) {
        self =
            switch code {
            case .decodeFailed: .decodeFailed
            case .unsupportedFormat: .unsupportedFormat
            case .tooLarge: .tooLarge
            case .tooManyPixels: .tooManyPixels
            // docs/ARCHITECTURE.md §7: a many-scan JPEG costs many decodes' CPU; the wire has no code of its own.
            case .tooManyScans: .tooLarge
            case .tooSmall: .tooSmall
            case .outOfMemory: .outOfMemory
            case .aspectMismatch: .aspectMismatch
            case .invalidRequest: .invalidRequest
            // A render stopped by its RenderCancellation: the job's deadline passed.
            case .cancelled: .timeout
            default: .processingFailed
            }
    }
}

extension JobFailure {
    init(_ error: ImagingError) {
        self.init(CropErrorCode(error.code), detail: error.description)
    }

    /// A failure reading the source photo.
    init(source error: StorageError) {
        if error.code == .notFound {
            self.init(.sourceNotFound, attempts: error.attempts, detail: error.description)
        } else if error.code == .tooLarge {
            // Judged from the store's size (or the capped read): the body was never read whole.
            self.init(.tooLarge, attempts: error.attempts, detail: error.description)
        } else if error.code == .invalidKey {
            self.init(.invalidRequest, attempts: error.attempts, detail: error.description)
        } else {
            self.init(.storageUnavailable, errorClass: .transient, attempts: error.attempts, detail: error.description)
        }
    }

    /// A failure writing the avatar: the previous avatar stays.
    init(upload error: StorageError) {
        self.init(.storageUnavailable, errorClass: .transient, attempts: error.attempts, detail: error.description)
    }

    init(database error: any Error, transient: Bool, attempts: Int) {
        if transient {
            self.init(
                .databaseUnavailable, errorClass: .transient, attempts: attempts, detail: String(describing: error))
        } else {
            // Our own SQL failing for a non-transient reason is a bug or a schema problem an
            // operator must fix; the job can be replayed afterwards.
            self.init(.internal, errorClass: .transient, attempts: attempts, detail: String(describing: error))
        }
    }

    init(_ error: ProtocolError) {
        self.init(error.errorCode, detail: error.description)
    }
}

/// The job flow's own failures.
extension JobFailure {
    /// A job past `worker.job-timeout-seconds` (transient: a replay may well succeed).
    static let timedOut = JobFailure(.timeout, detail: "the job ran past worker.job-timeout-seconds")

    /// A job whose commit had started at its deadline and still had not returned a whole deadline later.
    static let commitUnresolved = JobFailure(
        .timeout,
        detail: "the job's commit did not return within two job deadlines; a replay reports whether it was applied")

    /// A job id the ledger holds for another user: refused, never a duplicate of someone else's avatar.
    static let foreignJobID = JobFailure(
        .invalidRequest, errorClass: .permanent, detail: "the job id belongs to another user's job")
}
