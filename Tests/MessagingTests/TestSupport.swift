import Foundation
import Logging
import Synchronization
import Testing

@testable import Messaging

/// Logger for tests: warnings and above only.
func testLogger(_ label: String = "messaging-tests") -> Logger {
    var logger = Logger(label: label)
    logger.logLevel = .warning
    return logger
}

/// A random suffix so every test has its own topics and groups.
func uniqueName(_ prefix: String) -> String {
    "\(prefix)-\(UInt64.random(in: 0...UInt64.max) % 1_000_000_000_000)"
}

extension KafkaProducer {
    /// The completion-based `send`, which the worker's job threads use, waited for on the calling thread: where the
    /// record was stored, or why it failed.
    func sendWaiting(_ record: KafkaRecord, timeout: Duration = .seconds(30)) throws -> (
        partition: Int32, offset: Int64
    ) {
        final class Outcome: Sendable {
            let result = Mutex<Result<(partition: Int32, offset: Int64), KafkaError>?>(nil)
            let done = DispatchSemaphore(value: 0)
        }
        let outcome = Outcome()
        send(record) { result in
            outcome.result.withLock { $0 = result }
            outcome.done.signal()
        }
        let (seconds, attoseconds) = timeout.components
        let wait = outcome.done.wait(timeout: .now() + Double(seconds) + Double(attoseconds) * 1e-18)
        guard wait == .success, let result = outcome.result.withLock({ $0 }) else {
            throw WaitTimedOut(what: "the delivery report of a record to \(record.topic)")
        }
        return try result.get()
    }
}

struct WaitTimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "gave up waiting for \(what)" }
}

/// Polls `condition` without blocking a Swift concurrency thread; throws when it never became true.
/// The deadline only keeps a broken test from hanging: it is not a performance assertion.
func eventually(
    _ what: String, within limit: Duration = .seconds(60), _ condition: () throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while try !condition() {
        guard clock.now < deadline else { throw WaitTimedOut(what: what) }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// Records everything a consumer reports. Each received message is treated as a job that finishes
/// immediately (unless `holdJobs`), tracked by an OffsetTracker; `revoking` returns the tracker's
/// committable offsets for the revoked partitions, like the worker does.
final class RecordingDelegate: KafkaConsumerDelegate {
    struct State {
        var messages: [KafkaMessage] = []
        var assigned: Set<TopicPartition> = []
        var assignCalls: [[TopicPartition]] = []
        var revokeCalls: [[TopicPartition]] = []
        var committedOnRevoke: [TopicPartition: Int64] = [:]
        var tracker = OffsetTracker()
        var statistics: [KafkaStatistics] = []
    }

    let state = Mutex(State())
    /// Called on the poll thread for each message, after it was recorded.
    let onMessage: (@Sendable (KafkaConsumer, KafkaMessage) -> Void)?

    init(onMessage: (@Sendable (KafkaConsumer, KafkaMessage) -> Void)? = nil) {
        self.onMessage = onMessage
    }

    func consumer(_ c: KafkaConsumer, received message: KafkaMessage) {
        state.withLock { state in
            state.messages.append(message)
            state.tracker.started(message.topicPartition, offset: message.offset)
            state.tracker.finished(message.topicPartition, offset: message.offset)
        }
        onMessage?(c, message)
    }

    func consumer(_ c: KafkaConsumer, assigned: [TopicPartition]) {
        state.withLock { state in
            state.assigned.formUnion(assigned)
            state.assignCalls.append(assigned)
        }
    }

    func consumer(_ c: KafkaConsumer, revoking: [TopicPartition]) -> [TopicPartition: Int64] {
        state.withLock { state in
            let offsets = state.tracker.committable().filter { revoking.contains($0.key) }
            state.tracker.markCommitted(offsets)
            state.tracker.remove(revoking)
            state.assigned.subtract(revoking)
            state.revokeCalls.append(revoking)
            state.committedOnRevoke.merge(offsets) { max($0, $1) }
            return offsets
        }
    }

    func consumer(_ c: KafkaConsumer, statistics: KafkaStatistics) {
        state.withLock { $0.statistics.append(statistics) }
    }

    var messages: [KafkaMessage] { state.withLock { $0.messages } }
    var assigned: Set<TopicPartition> { state.withLock { $0.assigned } }
}

/// Consumer settings that keep group tests quick.
func consumerProperties(_ extra: [String: String] = [:]) -> [String: String] {
    [
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "500",
        "topic.metadata.refresh.interval.ms": "1000",
        "statistics.interval.ms": "1000",
    ].merging(extra) { _, new in new }
}

/// Sends `count` keyed records to `topic` (optionally one partition) and returns their deliveries.
@discardableResult
func produce(
    _ producer: KafkaProducer, topic: String, count: Int, partition: Int32? = nil, prefix: String = "m"
) async throws -> [(partition: Int32, offset: Int64)] {
    var deliveries: [(partition: Int32, offset: Int64)] = []
    for index in 0..<count {
        let record = KafkaRecord(
            topic: topic, key: Array("key-\(index)".utf8), value: Array("\(prefix)-\(index)".utf8),
            partition: partition)
        deliveries.append(try await producer.send(record))
    }
    return deliveries
}

extension KafkaMessage {
    var valueString: String { String(decoding: value, as: UTF8.self) }
}
