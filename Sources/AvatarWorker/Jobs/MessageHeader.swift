import Messaging

/// Header names on requests, results and DLQ records (docs/ARCHITECTURE.md §3–§4).
public enum MessageHeader {
    public static let contentType = "content-type"
    public static let jobID = "job-id"
    // DLQ records
    public static let errorCode = "error-code"
    public static let errorClass = "error-class"
    public static let errorMessage = "error-message"
    public static let attempts = "attempts"
    public static let originalTopic = "original-topic"
    public static let originalPartition = "original-partition"
    public static let originalOffset = "original-offset"
    public static let firstFailureTime = "first-failure-time"
    /// The request's original size when a DLQ record carries only the first `maxDLQValueBytes` of it.
    public static let valueTruncated = "value-truncated"

    /// The `job-id` header of an unreadable request, when it is a plausible id (a producer could put
    /// megabytes there, and it is echoed into the result event).
    public static func boundedJobID(_ message: KafkaMessage) -> String? {
        guard let value = message.headerString(jobID), (1...128).contains(value.utf8.count),
            value.unicodeScalars.allSatisfy({ (33...126).contains($0.value) })
        else { return nil }
        return value
    }
    // replays
    public static let replayCount = "replay-count"
    public static let replayedFrom = "replayed-from"
}
