import Dispatch
import Foundation
import Logging
import Messaging

/// Re-enqueues failed jobs from the DLQ (docs/ARCHITECTURE.md §3): reads the DLQ once, plans which
/// jobs to replay (`ReplayPlan`), and puts each back on the requests topic with its original
/// key, bytes and headers plus `replay-count` and `replayed-from`.
///
/// Replaying is safe to repeat: a job that already succeeded is a no-op for the worker (the
/// ledger), and one that fails again lands in the DLQ with its replay count, until the
/// replay limit refuses it.
public final class DLQReplayer: Sendable {
    public struct Settings: Sendable {
        public var kafka: KafkaConfiguration
        public var dlqTopic: String
        public var requestsTopic: String
        /// A job replayed this many times already is refused.
        public var maxReplays: Int
        /// Reading stops when no DLQ record arrived for this long.
        public var idleTimeout: Duration
        /// Reading fails when the DLQ holds records and none arrived within this long.
        public var firstRecordTimeout: Duration
        /// Replayed requests in flight at once.
        public var window: Int

        public init(
            kafka: KafkaConfiguration, dlqTopic: String, requestsTopic: String, maxReplays: Int = 3,
            idleTimeout: Duration = .seconds(3), firstRecordTimeout: Duration = .seconds(60), window: Int = 256
        ) {
            self.kafka = kafka
            self.dlqTopic = dlqTopic
            self.requestsTopic = requestsTopic
            self.maxReplays = maxReplays
            self.idleTimeout = idleTimeout
            self.firstRecordTimeout = firstRecordTimeout
            self.window = window
        }

        /// Brokers, topics and librdkafka properties from the worker's configuration.
        public init(values: ConfigurationValues) throws {
            self.init(
                kafka: try WorkerFactory.kafkaConfiguration(values), dlqTopic: try values.require(.topicDLQ),
                requestsTopic: try values.require(.topicRequests))
        }
    }

    /// What a replay run did.
    public struct Outcome: Sendable {
        public var replayed: [DLQRecord]
        public var refused: [ReplayPlan.Refused]
        /// Records that could not be sent, with a loggable reason.
        public var failed: [(record: DLQRecord, reason: String)]
    }

    public let settings: Settings
    private let logger: Logger

    public init(settings: Settings, logger: Logger) throws(ReplayError) {
        guard settings.maxReplays >= 0 else {
            throw ReplayError(.invalidSettings, "the replay limit must not be negative")
        }
        guard settings.window > 0 else { throw ReplayError(.invalidSettings, "the send window must be positive") }
        self.settings = settings
        self.logger = logger
    }

    /// Every record in the DLQ when the call starts.
    public func scan() async throws -> [DLQRecord] {
        let reader = DLQReader(
            kafka: settings.kafka, topic: settings.dlqTopic, idleTimeout: settings.idleTimeout,
            firstRecordTimeout: settings.firstRecordTimeout, logger: logger)
        // The reader blocks (librdkafka calls, polling): keep it off the cooperative pool.
        let messages = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result(catching: { () throws(ReplayError) in try reader.read() }))
            }
        }
        return messages.map(DLQRecord.init)
    }

    /// Reads the DLQ and decides what `filter` replays; sends nothing. With `forgotten`, a request whose user was
    /// forgotten after it is refused.
    public func plan(_ filter: ReplayFilter, forgotten: ForgottenUsers? = nil) async throws -> ReplayPlan {
        let plan = ReplayPlan(records: try await scan(), filter: filter, maxReplays: settings.maxReplays)
        guard let forgotten else { return plan }
        // Blocking database calls: off the cooperative pool.
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    with: Result {
                        var checked = plan
                        try checked.refuse(where: forgotten.cover)
                        return checked
                    })
            }
        }
    }

    /// Puts the plan's jobs back on the requests topic. `progress(done, total)` is called after
    /// each send. Never throws for a single record: failed sends are in the outcome.
    public func replay(
        _ plan: ReplayPlan, progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil
    ) async throws -> Outcome {
        var outcome = Outcome(replayed: [], refused: plan.refused, failed: [])
        for refused in plan.refused {
            logger.notice(
                "replay refused",
                metadata: [
                    LogKey.jobID: "\(refused.record.jobID ?? "-")",
                    LogKey.reason: "\(refused.reason)",
                ])
        }
        guard !plan.toReplay.isEmpty else { return outcome }
        var kafka = settings.kafka
        kafka.properties["enable.idempotence"] = kafka.properties["enable.idempotence"] ?? "true"
        let producer = try KafkaProducer(configuration: kafka, logger: logger)
        defer { producer.close(timeout: .seconds(10)) }
        let records = plan.toReplay
        let topic = settings.requestsTopic
        try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            var next = 0
            func add() {
                let index = next
                next += 1
                let record = records[index].replayRecord(topic: topic)
                group.addTask {
                    do {
                        _ = try await producer.send(record)
                        return (index, nil)
                    } catch {
                        return (index, "\(error)")
                    }
                }
            }
            while next < min(records.count, settings.window) { add() }
            var done = 0
            while let (index, failure) = try await group.next() {
                let record = records[index]
                if let failure {
                    outcome.failed.append((record, failure))
                    logger.error(
                        "could not replay a job",
                        metadata: [
                            LogKey.jobID: "\(record.jobID ?? "-")",
                            LogKey.error: "\(failure)",
                        ])
                } else {
                    outcome.replayed.append(record)
                    logger.info(
                        "job replayed",
                        metadata: [
                            LogKey.jobID: "\(record.jobID ?? "-")",
                            LogKey.replayCount: "\(record.replayCount + 1)",
                        ])
                }
                done += 1
                progress?(done, records.count)
                if next < records.count { add() }
            }
        }
        outcome.replayed.sort(by: DLQRecord.dlqOrder)
        return outcome
    }
}
