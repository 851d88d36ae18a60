import Messaging

/// Header names on requests, results and DLQ records (DESIGN §3–§4).
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
    // replays
    public static let replayCount = "replay-count"
    public static let replayedFrom = "replayed-from"
}
