import Foundation
import Messaging
import Synchronization

/// The results topic's null-value record for a forgotten user's key (docs/DATA.md, window 5): the topic is compacted
/// (`JobEventPublisher.Topics.configs`), so at its next compaction the broker drops every earlier result of the user
/// (paths, URLs, BlurHash, face boxes) and, after `delete.retention.ms`, the null itself. Results are keyed by the
/// lower-case user id, so a user's records share one partition and the null follows what it erases.
///
/// Written by whoever ends a forget or a job its forget covers: the publisher after a FORGOTTEN result and after the
/// result of a job the forget covers (`JobTrace.userForgotten`), `avatar-cropper forget` once it returns, and the
/// workers' `ForgetSweeper` when it completes a pending forget and at every forget's last look.
public struct ResultsErasure: Sendable {
    let producer: KafkaProducer
    let topic: String

    /// How long `erase` waits for the broker by default.
    public static let defaultTimeout = Duration.seconds(30)

    public init(producer: KafkaProducer, topic: String) {
        self.producer = producer
        self.topic = topic
    }

    /// The key of every result of `userID` (and of its null record): the user id, keyed like the request, so one
    /// user's results stay in order and compaction keeps the newest per user.
    static func key(_ userID: UUID) -> [UInt8] {
        Array(userID.uuidString.lowercased().utf8)
    }

    /// The null-value record for `userID`'s key on `topic`.
    static func record(topic: String, userID: UUID) -> KafkaRecord {
        KafkaRecord.tombstone(topic: topic, key: key(userID))
    }

    /// A null record could not be written: the broker refused it or did not confirm it in time.
    public struct NotWritten: Error, CustomStringConvertible {
        var reason: String
        public var description: String { "the results topic's null record was not written: \(reason)" }
    }

    /// Writes the null record for `userID` and returns once the broker confirmed it; throws `NotWritten` otherwise.
    /// Blocks the calling thread: call it from a thread of its own, never from Swift concurrency.
    public func erase(userID: UUID, timeout: Duration = defaultTimeout) throws {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<Void, KafkaError>?>(nil)
        producer.send(Self.record(topic: topic, userID: userID)) { result in
            outcome.withLock { $0 = result.map { _ in () } }
            done.signal()
        }
        guard done.wait(timeout: .now() + timeout.seconds) == .success else {
            throw NotWritten(reason: "no confirmation within \(timeout)")
        }
        if case .failure(let error) = outcome.withLock({ $0 }) { throw NotWritten(reason: "\(error)") }
    }
}
