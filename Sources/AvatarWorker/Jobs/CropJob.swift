import CropProtocol
import Foundation
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

    /// The request's job id, when the message could be read.
    public var jobID: String? {
        if case .success(let request) = decoded { return request.jobID }
        return nil
    }

    /// The job id as far as the message could be read: the request's, else the one a request that failed validation
    /// still named, else the message's `job-id` header (bounded). What the job's log lines and events name it by.
    public var namedJobID: String? {
        switch decoded {
        case .success(let request): request.jobID
        case .failure(let error): error.jobID ?? MessageHeader.boundedJobID(message)
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
