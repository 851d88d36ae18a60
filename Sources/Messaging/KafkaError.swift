/// An error from the Kafka client.
///
/// `description` is safe to log: it names the error and the librdkafka call, never payloads,
/// keys or configuration values. `debugDescription` adds librdkafka's own message and the call site.
public struct KafkaError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What kind of failure this is; callers switch on it.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case configuration, broker, timeout, messageTooLarge, unknownTopic, commit, closed, delivery
            case queueFull, authentication, authorization, invalidArgument, rebalance
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Invalid or unknown configuration property, or a client that could not be created.
        public static let configuration = Code(.configuration)
        /// A broker or the cluster failed the request (transport, leadership, coordinator, ...).
        public static let broker = Code(.broker)
        /// The operation or the message timed out.
        public static let timeout = Code(.timeout)
        /// The message (or batch) is larger than the client or broker allows.
        public static let messageTooLarge = Code(.messageTooLarge)
        /// The topic or partition does not exist.
        public static let unknownTopic = Code(.unknownTopic)
        /// An offset commit failed.
        public static let commit = Code(.commit)
        /// The client is closed or being destroyed.
        public static let closed = Code(.closed)
        /// A produced message could not be delivered.
        public static let delivery = Code(.delivery)
        /// The local producer queue is full (`queue.buffering.max.messages`/`.kbytes`).
        public static let queueFull = Code(.queueFull)
        /// SASL/SSL authentication failed.
        public static let authentication = Code(.authentication)
        /// The broker denied access to a topic, group or the cluster.
        public static let authorization = Code(.authorization)
        /// An argument was invalid (e.g. an empty topic name).
        public static let invalidArgument = Code(.invalidArgument)
        /// The consumer group is rebalancing or this member is no longer part of it.
        public static let rebalance = Code(.rebalance)

        public var description: String { base.rawValue }
    }

    /// The category callers switch on.
    public var code: Code
    /// librdkafka's raw error code (0 when the error did not come from librdkafka).
    public var rawCode: Int32
    /// librdkafka's symbolic name of `rawCode`, e.g. `MSG_SIZE_TOO_LARGE` or `_MSG_TIMED_OUT`.
    public var errorName: String
    /// Whether trying the same operation again may succeed.
    public var isRetriable: Bool
    /// Whether librdkafka raised a fatal error: the client instance is unusable.
    public var isFatal: Bool
    /// The librdkafka call (or client operation) that failed.
    public var operation: String
    /// librdkafka's human-readable message; may name topics and brokers, so only in `debugDescription`.
    public var detail: String
    /// Where in this module the error was recorded.
    public var file: String
    public var line: Int

    public init(
        code: Code, rawCode: Int32 = 0, errorName: String = "", isRetriable: Bool = false, isFatal: Bool = false,
        operation: String, detail: String = "", file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.rawCode = rawCode
        self.errorName = errorName
        self.isRetriable = isRetriable
        self.isFatal = isFatal
        self.operation = operation
        self.detail = detail
        self.file = file
        self.line = line
    }

    /// The raw librdkafka response code as a typed value.
    public var responseCode: KafkaResponseCode { KafkaResponseCode(rawValue: rawCode) }

    public var description: String {
        var text = "KafkaError(\(code)"
        if rawCode != 0 || !errorName.isEmpty {
            text += ", \(errorName.isEmpty ? "error" : errorName) (\(rawCode))"
        }
        if isRetriable { text += ", retriable" }
        if isFatal { text += ", fatal" }
        return text + ") in \(operation)"
    }

    public var debugDescription: String {
        var text = description
        if !detail.isEmpty { text += ": \(detail)" }
        return text + " [\(file):\(line)]"
    }

    static func closed(_ operation: String, file: String = #fileID, line: Int = #line) -> KafkaError {
        KafkaError(code: .closed, operation: operation, detail: "the client is closed", file: file, line: line)
    }
}
