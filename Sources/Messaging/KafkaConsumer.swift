import Foundation
import Logging
import Metrics
import Synchronization

/// A Kafka consumer: a group member with manual offset commits, or a reader of fixed partitions that joins no group.
///
/// One dedicated poll thread (started by `run`) polls librdkafka; messages, rebalances,
/// logs and statistics are all handled on it and handed to the delegate. Offsets are never committed
/// automatically: the owner commits what it has finished (`commit`, `commitAsync`, or by returning
/// offsets from `consumer(_:revoking:)`).
public final class KafkaConsumer: Sendable {
    /// A reader's (`init(configuration:reading:groupID:logger:metricsFactory:)`) is never joined.
    public let groupID: String
    public let topics: [String]
    private let client: RDKafkaClient
    private let events: ConsumerEvents
    private let pollThread = Mutex<JoinableThread?>(nil)
    private let logger: Logger

    /// How often librdkafka reports statistics unless `statistics.interval.ms` says otherwise: they feed
    /// the consumer-lag gauge and the worker's readiness check.
    public static let defaultStatisticsInterval: Duration = .seconds(5)

    /// librdkafka defaults of this consumer; `configuration.properties` override them.
    static let defaultProperties: [String: String] = [
        "enable.auto.commit": "false",
        "enable.auto.offset.store": "false",
        "auto.offset.reset": "earliest",
        "statistics.interval.ms": "\(defaultStatisticsInterval.components.seconds * 1000)",
    ]

    /// Creates the consumer and subscribes to `topics`; the group is joined once `run` polls.
    ///
    /// Defaults (overridable through `configuration.properties`): `enable.auto.commit=false`,
    /// `enable.auto.offset.store=false`, `auto.offset.reset=earliest`, `statistics.interval.ms` (`defaultStatisticsInterval`).
    /// Set `partition.assignment.strategy=cooperative-sticky` for incremental (COOPERATIVE) rebalances.
    ///
    /// - Parameter metricsFactory: where `kafka_consumer_lag`, `kafka_commit_failures_total` etc. go;
    ///   nil uses the global `MetricsSystem`.
    public convenience init(
        configuration: KafkaConfiguration, groupID: String, topics: [String], logger: Logger,
        metricsFactory: (any MetricsFactory)? = nil
    ) throws {
        try self.init(configuring: configuration, groupID: groupID, topics: topics, logger: logger, metricsFactory)
        try client.subscribe(topics)
    }

    /// Creates a reader of `start`'s partitions, each from the offset given (`KafkaOffset.beginning`: the first
    /// record still stored), outside any group's membership: it never joins `groupID` (librdkafka requires one of
    /// every consumer), so no group join can hold it up (a fresh group's first join once took the test broker over
    /// a minute), it gets no rebalance, and it commits nothing. Reading starts once `run` polls. For tools that read
    /// a topic through once (the DLQ replay).
    public convenience init(
        configuration: KafkaConfiguration, reading start: [TopicPartition: Int64], groupID: String, logger: Logger,
        metricsFactory: (any MetricsFactory)? = nil
    ) throws {
        try self.init(
            configuring: configuration, groupID: groupID, topics: Array(Set(start.keys.map(\.topic))).sorted(),
            logger: logger, metricsFactory)
        try client.assign(start)
        events.assigned(Array(start.keys))
    }

    private init(
        configuring configuration: KafkaConfiguration, groupID: String, topics: [String], logger: Logger,
        _ metricsFactory: (any MetricsFactory)?
    ) throws {
        var logger = logger
        logger[metadataKey: KafkaLogKeys.group] = "\(groupID)"
        let events = ConsumerEvents(logger: logger, metrics: KafkaMetricsRecorder(factory: metricsFactory))
        let client = try RDKafkaClient.make(
            kind: .consumer,
            properties: configuration.librdkafkaProperties(
                defaults: Self.defaultProperties, required: ["group.id": groupID]),
            handler: events)
        logger[metadataKey: KafkaLogKeys.client] = "\(client.name)"
        events.logger = logger
        self.logger = logger
        self.events = events
        self.client = client
        self.groupID = groupID
        self.topics = topics
    }

    deinit {
        close()
    }

    /// Starts the dedicated poll thread; returns immediately. Calling it again has no effect.
    public func run(delegate: KafkaConsumerDelegate) {
        guard events.start(owner: self, delegate: delegate) else {
            logger.error("KafkaConsumer.run called twice or after close; ignored")
            return
        }
        let thread = JoinableThread(name: "kafka-consumer-poll") { [client, events] in
            events.pollLoop(client: client)
        }
        pollThread.withLock { $0 = thread }
    }

    /// Commits `offsets` (next offset to read per partition) and waits for the broker. Safe from any
    /// thread, including the delegate's callbacks. Throws a `.commit` KafkaError.
    public func commit(_ offsets: [TopicPartition: Int64]) throws {
        guard !offsets.isEmpty else { return }
        try events.commit(client, offsets, mode: "sync")
    }

    /// Commits `offsets` without waiting; failures are logged and counted
    /// (`kafka_commit_failures_total{mode="async"}`) when the poll thread serves the result.
    public func commitAsync(_ offsets: [TopicPartition: Int64]) {
        guard !offsets.isEmpty else { return }
        do {
            try client.commitAsync(offsets)
        } catch {
            events.metrics.commitFailure(error, mode: "async")
            logger.warning("Asynchronous commit failed", metadata: [KafkaLogKeys.error: "\(error)"])
        }
    }

    /// Stops fetching `partitions` (backpressure); messages already delivered stay delivered.
    public func pause(_ partitions: [TopicPartition]) {
        setPaused(true, partitions)
    }

    /// Resumes fetching `partitions` from the message after the last one delivered.
    public func resume(_ partitions: [TopicPartition]) {
        setPaused(false, partitions)
    }

    private func setPaused(_ paused: Bool, _ partitions: [TopicPartition]) {
        guard !partitions.isEmpty else { return }
        do {
            try client.setPaused(paused, partitions)
        } catch {
            logger.warning(
                "Could not \(paused ? "pause" : "resume") partitions",
                metadata: [KafkaLogKeys.partitions: "\(partitions)", KafkaLogKeys.error: "\(error)"])
        }
    }

    /// The partitions currently assigned to this consumer.
    public var assignment: Set<TopicPartition> {
        (try? client.assignment()) ?? []
    }

    /// The committed offsets (next offset to read) of `partitions` as the group coordinator has them;
    /// partitions without a committed offset are left out.
    public func committedOffsets(
        for partitions: [TopicPartition], timeout: Duration
    ) throws -> [TopicPartition: Int64] {
        guard !partitions.isEmpty else { return [:] }
        return try client.committedOffsets(partitions, timeout: timeout)
    }

    /// The latest librdkafka statistics (every `statistics.interval.ms`).
    public var latestStatistics: KafkaStatistics? {
        events.statistics.withLock { $0 }
    }

    /// Stops delivering new messages: pauses every assigned partition, and any assigned later, while
    /// keeping the group membership (e.g. on SIGTERM, before draining in-flight jobs and `close`).
    public func stopFetching() {
        events.stopFetching()
        do {
            try client.pauseAssignment()
        } catch {
            logger.warning("Could not pause the assignment", metadata: [KafkaLogKeys.error: "\(error)"])
        }
    }

    /// Leaves the group cleanly (the delegate's `revoking` runs on the poll thread and its offsets are
    /// committed), joins the poll thread and destroys the client. Idempotent.
    public func close() {
        guard events.beginClosing() else { return }
        if let thread = pollThread.withLock({ $0 }) {
            if thread.isCurrent {
                // Called from a delegate callback: the loop ends and closes after the callback returns.
                logger.debug("KafkaConsumer.close called on the poll thread; closing when the callback returns")
                return
            }
            thread.join()
        } else {
            events.leaveGroup(client: client)
        }
        client.destroy()
    }
}
