import CropProtocol
import Foundation
import Messaging

/// One DLQ record as the replay tool sees it: the original message plus what its error
/// headers say (docs/ARCHITECTURE.md §3). Reading never fails: a missing or unreadable header is nil.
public struct DLQRecord: Sendable {
    /// The DLQ record itself: original key, bytes and headers plus the error headers.
    public let message: KafkaMessage
    /// The `job-id` header, else the job id inside the request (nil for a malformed request).
    public let jobID: String?
    /// The message key: the user id the request was keyed by.
    public let userID: String?
    public let errorCode: String?
    /// The `error-class` header, else the error code's default class.
    public let errorClass: CropErrorClass?
    public let attempts: Int?
    /// When the job first failed: the `first-failure-time` header, else the record's timestamp.
    public let failedAt: Date?
    /// How often this job was already replayed (`replay-count`, 0 when absent).
    public let replayCount: Int

    public init(_ message: KafkaMessage) {
        self.message = message
        userID = message.key.flatMap { String(validating: $0, as: UTF8.self) }
        jobID = Self.jobID(of: message)
        errorCode = message.headerString(MessageHeader.errorCode)
        errorClass =
            message.headerString(MessageHeader.errorClass).flatMap(CropErrorClass.init(rawValue:))
            ?? errorCode.flatMap(CropErrorCode.init(rawValue:))?.defaultClass
        attempts = message.headerString(MessageHeader.attempts).flatMap { Int($0) }
        failedAt =
            message.headerString(MessageHeader.firstFailureTime).flatMap(ReplayTime.parseISO8601)
            ?? message.timestamp
        replayCount = message.headerString(MessageHeader.replayCount).flatMap { Int($0) }.map { max(0, $0) } ?? 0
    }

    /// Where this record is: `topic/partition/offset`, the value of `replayed-from`.
    public var location: String { "\(message.topic)/\(message.partition)/\(message.offset)" }

    /// What identifies the job within one replay run: its job id, else the record's location.
    var identity: String { jobID ?? location }

    private static func jobID(of message: KafkaMessage) -> String? {
        if let header = message.headerString(MessageHeader.jobID), !header.isEmpty { return header }
        guard
            let request = try? CropCodec.decodeRequest(
                message.value, contentType: message.headerString(MessageHeader.contentType))
        else { return nil }
        return request.jobID.isEmpty ? nil : request.jobID
    }

    /// Whether this record was written after `other` (the latest failure of a job wins).
    /// Within one partition the offset decides; across partitions the record timestamp.
    func isLater(than other: DLQRecord) -> Bool {
        if message.topic == other.message.topic && message.partition == other.message.partition {
            return message.offset > other.message.offset
        }
        let mine = message.timestamp ?? .distantPast
        let theirs = other.message.timestamp ?? .distantPast
        if mine != theirs { return mine > theirs }
        return (message.partition, message.offset) > (other.message.partition, other.message.offset)
    }

    /// DLQ order: by record timestamp, then partition and offset.
    static func dlqOrder(_ a: DLQRecord, _ b: DLQRecord) -> Bool {
        let left = a.message.timestamp ?? .distantPast
        let right = b.message.timestamp ?? .distantPast
        if left != right { return left < right }
        return (a.message.partition, a.message.offset) < (b.message.partition, b.message.offset)
    }
}

extension DLQRecord {
    /// Headers describing one failure; a replayed request drops them (the worker writes new
    /// ones if it fails again). `original-*` and `first-failure-time` stay, so a job that
    /// fails again keeps where it first came from and when it first failed.
    static let failureHeaders: Set<String> = [
        MessageHeader.errorCode, MessageHeader.errorClass, MessageHeader.errorMessage, MessageHeader.attempts,
        MessageHeader.replayCount, MessageHeader.replayedFrom,
    ]

    /// The request to put back on `topic`: the original key and bytes, the original headers (the `traceparent`
    /// naming the failed job's span, so the replayed job is a child of it in the same trace: `JobTracing`)
    /// minus the failure headers, plus `replay-count` (previous + 1) and `replayed-from`.
    public func replayRecord(topic: String) -> KafkaRecord {
        var headers = message.headers.filter { !Self.failureHeaders.contains($0.key) }
        headers.append(KafkaHeader(key: MessageHeader.replayCount, string: "\(replayCount + 1)"))
        headers.append(KafkaHeader(key: MessageHeader.replayedFrom, string: location))
        return KafkaRecord(topic: topic, key: message.key, value: message.value, headers: headers)
    }
}
