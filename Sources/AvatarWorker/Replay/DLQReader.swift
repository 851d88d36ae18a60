import Foundation
import Logging
import Messaging
import Synchronization

/// Reads the whole DLQ once, from the first record still stored in every partition up to the end
/// offsets captured when the read starts, as a reader that joins no group (a fixed assignment, nothing
/// committed), so the workers' group is never disturbed and no group join can hold the read up.
///
/// A read always ends: when every partition reached its captured end (and the rest of the
/// last fetched batch had a moment to arrive), or when no record arrived for `idleTimeout` after
/// the last one, whichever comes first; it fails when not even the first record arrived within
/// `firstRecordTimeout`. Some brokers (Tansu, the test broker) report the end one batch
/// short, so records past the captured end are still taken when they were written before
/// the read started; records written later (e.g. jobs failing again while a replay runs)
/// are left for the next run.
///
/// Blocking: call `read` from a Dispatch thread (`DLQReplayer` does), never Swift concurrency.
public struct DLQReader: Sendable {
    public var kafka: KafkaConfiguration
    public var topic: String
    /// Stop when no record arrived for this long after the last one.
    public var idleTimeout: Duration
    /// Fail when the DLQ holds records and none arrived within this long.
    public var firstRecordTimeout: Duration
    /// Once every partition reached its end: how long to wait for the rest of the last batch.
    public var settle: Duration
    private let logger: Logger

    public init(
        kafka: KafkaConfiguration, topic: String, idleTimeout: Duration = .seconds(3),
        firstRecordTimeout: Duration = .seconds(60), settle: Duration = .milliseconds(500), logger: Logger
    ) {
        self.kafka = kafka
        self.topic = topic
        self.idleTimeout = idleTimeout
        self.firstRecordTimeout = firstRecordTimeout
        self.settle = settle
        self.logger = logger
    }

    /// Every record of the DLQ present when the read started, in partition and offset order.
    public func read() throws(ReplayError) -> [KafkaMessage] {
        let startedAt = Date()
        let ends: [PartitionOffsets]
        do {
            ends = try KafkaAdmin.partitionOffsets(
                of: topic, configuration: kafka, timeout: max(firstRecordTimeout, .seconds(1)), logger: logger)
        } catch {
            throw ReplayError(.dlqUnavailable, "could not read the DLQ's offsets", detail: "\(error)")
        }
        let nonEmpty = ends.filter { !$0.isEmpty }
        logger.info(
            "reading the DLQ",
            metadata: [
                LogKey.partitions: "\(ends.count)",
                LogKey.records: "\(nonEmpty.reduce(0) { $0 + $1.high - $1.low })",
            ])
        guard !nonEmpty.isEmpty else { return [] }

        var configuration = kafka
        // A record deleted by retention between the offsets' query and the fetch: start at the first one left.
        configuration.properties["auto.offset.reset"] = "earliest"
        let collector = DLQCollector()
        let consumer: KafkaConsumer
        do {
            consumer = try KafkaConsumer(
                configuration: configuration,
                reading: Dictionary(
                    uniqueKeysWithValues: nonEmpty.map {
                        (TopicPartition(topic: topic, partition: $0.partition), $0.low)
                    }),
                groupID: "avatar-cropper-replay-\(UUID().uuidString.lowercased())", logger: logger)
        } catch {
            throw ReplayError(.dlqUnavailable, "could not create the DLQ consumer", detail: "\(error)")
        }
        consumer.run(delegate: collector)
        defer { consumer.close() }

        let endOffsets = Dictionary(uniqueKeysWithValues: nonEmpty.map { ($0.partition, $0.high) })
        let clock = ContinuousClock()
        let firstRecordDeadline = clock.now + firstRecordTimeout
        while true {
            Thread.sleep(forTimeInterval: 0.05)
            let progress = collector.progress()
            guard let lastActivity = progress.lastActivity else {
                if clock.now >= firstRecordDeadline {
                    throw ReplayError(
                        .dlqUnavailable, "no DLQ record arrived in time",
                        detail: "first record timeout \(firstRecordTimeout)")
                }
                continue
            }
            let quiet = clock.now - lastActivity
            if quiet >= idleTimeout {
                logger.notice(
                    "DLQ read ended: no record for the idle timeout",
                    metadata: [LogKey.received: "\(collector.count)", LogKey.idleTimeout: "\(idleTimeout)"])
                break
            }
            let reachedEnd = endOffsets.allSatisfy { partition, end in (progress.next[partition] ?? 0) >= end }
            if reachedEnd && quiet >= settle {
                logger.debug("DLQ read ended: end offsets reached", metadata: [LogKey.received: "\(collector.count)"])
                break
            }
        }
        var unique: [TopicPartition: [Int64: KafkaMessage]] = [:]  // a fetch retried may deliver a record twice
        for message in collector.messages() {
            // Past the captured end: only what was already written when the read started.
            if let end = endOffsets[message.partition], message.offset >= end,
                (message.timestamp ?? .distantPast) >= startedAt
            {
                continue
            }
            unique[message.topicPartition, default: [:]][message.offset] = message
        }
        return unique.values.flatMap(\.values).sorted { ($0.partition, $0.offset) < ($1.partition, $1.offset) }
    }
}

/// Collects what the DLQ consumer's poll thread delivers.
private final class DLQCollector: KafkaConsumerDelegate, Sendable {
    struct Progress {
        /// Next offset per partition (one past the last record received).
        var next: [Int32: Int64] = [:]
        /// When the last record arrived.
        var lastActivity: ContinuousClock.Instant?
    }

    private let state = Mutex<(messages: [KafkaMessage], progress: Progress)>(([], Progress()))

    func progress() -> Progress { state.withLock { $0.progress } }
    func messages() -> [KafkaMessage] { state.withLock { $0.messages } }
    var count: Int { state.withLock { $0.messages.count } }

    func consumer(_ c: KafkaConsumer, received message: KafkaMessage) {
        state.withLock { state in
            state.messages.append(message)
            let next = state.progress.next[message.partition] ?? 0
            state.progress.next[message.partition] = max(next, message.offset + 1)
            state.progress.lastActivity = .now
        }
    }

    /// A reader that joins no group gets no rebalance.
    func consumer(_ c: KafkaConsumer, assigned: [TopicPartition]) {}

    /// Nothing is ever committed.
    func consumer(_ c: KafkaConsumer, revoking: [TopicPartition]) -> [TopicPartition: Int64] { [:] }
}
