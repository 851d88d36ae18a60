/// An error from an object store.
///
/// `description` is safe to log: it names the code, the operation, the HTTP status and the attempt count,
/// never the key, bucket, path or credentials. `debugDescription` adds the backend's own detail (the S3 error
/// code and message, or the system error text), which is meant for debugging, not for routine logs.
public struct StorageError: Error, CustomStringConvertible, CustomDebugStringConvertible, Sendable {
    /// What went wrong, for callers to switch on (compare with `==` or `case .notFound:`; always add `default:`,
    /// more codes may come).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case notFound, accessDenied, invalidKey, unavailable, rejected, io, invalidConfiguration, tooLarge
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The object (or, for `ping`, the bucket or directory) does not exist.
        public static let notFound = Code(.notFound)
        /// Credentials refused or signature not accepted (HTTP 401/403), or file permissions.
        public static let accessDenied = Code(.accessDenied)
        /// The key failed `ObjectKey.validate` (path traversal, control characters, too long, ...).
        public static let invalidKey = Code(.invalidKey)
        /// The store could not be reached or answered "try later": connection refused, timeouts, lost
        /// connections, HTTP 5xx, 408, 429. Usually transient.
        public static let unavailable = Code(.unavailable)
        /// The store refused the request for another reason (other 4xx, unexpected 3xx, a local file where a
        /// directory is needed). Not transient.
        public static let rejected = Code(.rejected)
        /// A local file system error (disk full, read error).
        public static let io = Code(.io)
        /// The store's configuration is unusable (bad URL, missing credentials).
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The object is larger than the caller's cap (`get(_:maxBytes:)`). Not transient.
        public static let tooLarge = Code(.tooLarge)

        public var description: String { base.rawValue }
    }

    /// The operation that failed; safe to log.
    public enum Operation: String, Sendable {
        case get, put, exists, delete, ping, configure
    }

    public var code: Code
    /// Whether retrying the same request later may succeed. The worker's `RetryPolicy` retries only these.
    public var isTransient: Bool
    /// The HTTP status the store answered with, when there was an answer.
    public var httpStatus: Int?
    /// The operation that failed, when known.
    public var operation: Operation?
    /// How many attempts were made before giving up (set by the worker's `RetryPolicy`; 1 for a single call).
    public var attempts: Int
    /// Backend detail for debugging (S3 error code and message, system error text). Never a key or a secret,
    /// but still kept out of `description`.
    public var detail: String?

    public init(
        code: Code,
        isTransient: Bool? = nil,
        httpStatus: Int? = nil,
        operation: Operation? = nil,
        attempts: Int = 1,
        detail: String? = nil
    ) {
        self.code = code
        self.isTransient = isTransient ?? (code == .unavailable)
        self.httpStatus = httpStatus
        self.operation = operation
        self.attempts = attempts
        self.detail = detail
    }

    public var description: String {
        var text = "storage error: \(code)"
        if let operation { text += " during \(operation.rawValue)" }
        if let httpStatus { text += " (HTTP \(httpStatus))" }
        text += isTransient ? ", transient" : ", permanent"
        if attempts > 1 { text += ", after \(attempts) attempts" }
        return text
    }

    public var debugDescription: String {
        guard let detail, !detail.isEmpty else { return description }
        return description + ": " + detail
    }
}

extension StorageError {
    static func invalidKey(_ reason: String) -> StorageError {
        StorageError(code: .invalidKey, detail: reason)
    }

    static func invalidConfiguration(_ reason: String) -> StorageError {
        StorageError(code: .invalidConfiguration, operation: .configure, detail: reason)
    }

    func with(operation: Operation) -> StorageError {
        var copy = self
        if copy.operation == nil { copy.operation = operation }
        return copy
    }
}
