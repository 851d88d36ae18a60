import CropGeometry
import CropProtocol
import Foundation
import Imaging
import Messaging

/// One crop request as it travels through the pool.
public struct CropJob: Sendable {
    public let message: KafkaMessage
    /// When the consumer handed it over (queue wait is measured from here).
    public let receivedAt: ContinuousClock.Instant
    /// The request, decoded and validated once, on the consumer thread (a few microseconds).
    public let decoded: Result<ValidatedCropRequest, ProtocolError>
    public var partition: TopicPartition { TopicPartition(topic: message.topic, partition: message.partition) }

    public init(message: KafkaMessage, receivedAt: ContinuousClock.Instant) {
        self.message = message
        self.receivedAt = receivedAt
        do {
            let wire = try CropCodec.decodeRequest(
                message.value, contentType: message.headerString(MessageHeader.contentType))
            self.decoded = .success(try ValidatedCropRequest(wire))
        } catch {
            self.decoded = .failure(error)
        }
    }

    /// What the scheduler orders by: the canonical (lower-cased) user id from the body, never the message key,
    /// so one user's jobs run one at a time here whatever their keys. A message without a readable user id
    /// publishes nothing and gets a key of its own.
    public var orderingKey: String {
        let userID: UUID?
        switch decoded {
        case .success(let request): userID = request.userID
        case .failure(let error): userID = error.userID
        }
        return userID.map { "user:" + $0.uuidString.lowercased() } ?? "message:\(message.partition)/\(message.offset)"
    }
}

/// Stages whose latency is measured per job.
public enum JobStage: String, Sendable, CaseIterable {
    case fetch, probe, render, encode, upload, database
}

/// Everything a finished job reports: the result event, the metrics record and, for a
/// failure, the DLQ record are all built from this.
public struct JobReport: Sendable {
    public enum Outcome: Sendable {
        /// A new avatar was published with this version.
        case applied(version: Int64, path: String)
        /// The job had already succeeded (redelivery or replay): nothing changed.
        case duplicate(version: Int64, path: String?)
        /// A newer request was already published: nothing changed. The avatar the profile names now.
        case superseded(version: Int64, path: String?)
        /// A forget request erased the user (`UserForgetting`); `objects` avatar objects were deleted.
        case forgotten(objects: Int)
        case failed(JobFailure)
    }

    public var outcome: Outcome
    /// The job id and user as far as they could be read (a malformed message may have neither).
    public var jobID: String?
    public var userID: UUID?
    public var request: ValidatedCropRequest?
    public var header: ImageHeader?
    public var render: RenderResult?
    public var extraPaths: [(size: Int, path: String)] = []
    /// The render attempt the ledger counted for this run (`AvatarLedger.markStarted`), once started.
    var renderAttempt: Int?
    public var reservedBytes: Int = 0
    public var uploadAttempts: Int = 0
    public var latencies: [JobStage: Duration] = [:]
    public var queueWait: Duration = .zero
    public var total: Duration = .zero
    public var finishedAt = Date()
    /// When the ledger says this job first failed (the DLQ's `first-failure-time`), if it could be recorded.
    public var firstFailedAt: Date?

    public var failure: JobFailure? {
        if case .failed(let failure) = outcome { return failure }
        return nil
    }
}
