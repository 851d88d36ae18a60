/// Why a replay could not run. `description` is safe to log: `detail` holds only log-safe text
/// (a `KafkaError`'s description, a timeout).
public struct ReplayError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The DLQ could not be read (unknown topic, broker unreachable, no partition assigned).
        case dlqUnavailable
        /// The settings make no sense (e.g. a negative replay limit).
        case invalidSettings
    }

    public var code: Code
    public var reason: String
    public var detail: String

    public init(_ code: Code, _ reason: String, detail: String = "") {
        self.code = code
        self.reason = reason
        self.detail = detail
    }

    public var description: String { detail.isEmpty ? reason : "\(reason): \(detail)" }
    public var debugDescription: String { description }
}
