import Dispatch
import Foundation
import Logging
import Messaging
import ServiceLifecycle
import Synchronization

/// The worker's Kafka shell (docs/ARCHITECTURE.md §3): consumes crop requests, runs them on the key-ordered
/// pool and publishes their events, doing what its `PartitionFlow` decides — pause and resume partitions,
/// commit offsets only up to the lowest job not yet finished, retry or give up on events. On SIGTERM or
/// revocation it stops fetching, lets in-flight jobs finish within a deadline, commits what finished and
/// leaves; unfinished jobs are redelivered to whoever takes the partition over, and the ledger makes the
/// repeat harmless. Jobs past their deadline are the `JobWatchdog`'s.
public final class AvatarWorkerService: Service, KafkaConsumerDelegate, Sendable {
    public let settings: Settings
    private let metrics = WorkerMetrics()
    private let publisher: JobEventPublisher
    let consumer: KafkaConsumer
    private let logger: Logger
    let flow: Mutex<PartitionFlow>
    private let runner: JobRunner
    private let scheduler: KeyOrderedScheduler<CropJob>

    public init(
        settings: Settings, processor: CropJobProcessor, publisher: JobEventPublisher, logger: Logger
    ) throws {
        self.settings = settings
        self.publisher = publisher
        self.logger = logger
        self.flow = Mutex(
            PartitionFlow(
                settings: .init(
                    maxBufferedPerPartition: settings.maxBufferedPerPartition, drainDeadline: settings.drainDeadline,
                    publishRetry: PartitionFlow.publishRetry)))
        var consumerConfiguration = settings.kafka
        consumerConfiguration.properties.merge(Self.consumerDefaults) { configured, _ in configured }
        self.consumer = try KafkaConsumer(
            configuration: consumerConfiguration, groupID: settings.groupID, topics: [settings.topic], logger: logger)
        let box = SchedulerTarget()
        self.runner = JobRunner(
            processor: processor, publisher: publisher,
            watchdog: JobWatchdog(jobTimeout: settings.jobTimeout), metrics: metrics,
            tracing: JobTracing(consumerGroup: settings.groupID, resultsTopic: publisher.topics.results),
            logger: logger,
            answered: { job, published, attempt in
                box.service?.answered(job, published: published, attempt: attempt) ?? .finished(resume: nil)
            })
        self.scheduler = KeyOrderedScheduler(
            width: settings.jobsInFlight, execute: { job in box.service?.runner.execute(job) })
        box.service = self
    }

    /// Breaks the init-time cycle between the scheduler's and the runner's closures and the service.
    private final class SchedulerTarget: @unchecked Sendable {
        // @unchecked Sendable: written once in init before any job can run, read-only after.
        weak var service: AvatarWorkerService?
    }

    // MARK: - Service

    public func run() async throws {
        consumer.run(delegate: self)
        logger.info(
            "worker started",
            metadata: [LogKey.renderSlots: "\(settings.renderSlots)", LogKey.jobsInFlight: "\(settings.jobsInFlight)"])
        await withGracefulShutdownHandler {
            while !Task.isCancelled && !flow.withLock({ $0.stopping }) {
                try? await Task.sleep(for: settings.commitInterval)
                commitFinished()
            }
        } onGracefulShutdown: {
            _ = self.flow.withLock { $0.beginDrain(now: Date()) }
        }
        await drain()
        if let failure = flow.withLock({ $0.failure }) { throw failure }
    }

    /// Stops fetching, waits for running jobs up to the deadline, commits and leaves the group.
    private func drain() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // Blocking waits stay off the cooperative pool.
            Thread.detachNewThread { [self] in
                let deadline = flow.withLock { $0.beginDrain(now: Date()) }
                logger.info("draining: no new jobs")
                consumer.stopFetching()
                let abandoned = scheduler.stop()
                let drained = scheduler.wait(untilNoJobMatches: { _ in true }, deadline: deadline)
                if !drained || !abandoned.isEmpty {
                    logger.warning(
                        "left unfinished jobs for redelivery",
                        metadata: [LogKey.queued: "\(abandoned.count)", LogKey.running: "\(scheduler.count.running)"])
                }
                publisher.flush(timeout: .seconds(max(1, deadline.timeIntervalSinceNow)))
                commitFinished(synchronously: true)
                consumer.close()
                publisher.close()
                logger.info("worker stopped")
                continuation.resume()
            }
        }
    }

    // MARK: - KafkaConsumerDelegate (called on the consumer's poll thread)

    public func consumer(_ consumer: KafkaConsumer, received message: KafkaMessage) {
        let job = CropJob(message: message, receivedAt: .now)
        if let pause = changeFlow({ $0.received(JobPosition(job)) }) { consumer.pause([pause.partition]) }
        // Ordered by the canonical user id from the body, whatever the message key (docs/ARCHITECTURE.md §3).
        scheduler.submit(key: job.orderingKey, job)
    }

    /// Cooperative incremental rebalancing (docs/ARCHITECTURE.md §3): when a worker joins or leaves, only the
    /// partitions that change owner are revoked and drained; the others keep running. A group cannot mix it with
    /// the eager assignors (`range`, `roundrobin`): `kafka.property.partition.assignment.strategy` overrides it.
    public static let defaultAssignmentStrategy = "cooperative-sticky"
    static let assignmentStrategyProperty = "partition.assignment.strategy"
    /// The longest a fetch waits at the broker for a message (librdkafka's default is 500 ms). A fetch is a long
    /// poll that a broker may answer only when the wait ends even after a message arrived (Tansu does; Apache Kafka
    /// answers at once), so this wait bounds the broker hop of a job at low load. The cost: an idle consumer sends
    /// a fetch request per broker every 5 ms (bench/README.md, "Latency at low load", measures both).
    static let fetchWaitMilliseconds = 5

    /// The consumer properties the worker sets unless configured (`kafka.property.*` wins).
    static let consumerDefaults = [
        assignmentStrategyProperty: defaultAssignmentStrategy, "fetch.wait.max.ms": "\(fetchWaitMilliseconds)",
    ]

    public func consumer(_ consumer: KafkaConsumer, assigned partitions: [TopicPartition]) {
        changeFlow { $0.assigned(partitions) }
        logger.info("partitions assigned", metadata: [LogKey.partitions: "\(partitions.map(\.partition))"])
    }

    public func consumer(_ consumer: KafkaConsumer, revoking partitions: [TopicPartition]) -> [TopicPartition: Int64] {
        let revoking = Set(partitions)
        // Jobs not started yet are given up; running ones may finish within the deadline.
        let abandoned = scheduler.removeQueued { revoking.contains($0.partition) }
        let deadline = flow.withLock { $0.revocationDeadline(now: Date()) }
        let drained = scheduler.wait(untilNoJobMatches: { revoking.contains($0.partition) }, deadline: deadline)
        // Their events were queued on the pool threads: let the broker confirm them so their
        // offsets can be committed before the partitions go.
        publisher.flush(timeout: .seconds(max(1, deadline.timeIntervalSinceNow)))
        let offsets = changeFlow { $0.revoked(partitions, abandoned: abandoned.map(JobPosition.init)) }
        logger.info(
            "partitions revoked",
            metadata: [
                LogKey.partitions: "\(partitions.map(\.partition))", LogKey.abandoned: "\(abandoned.count)",
                LogKey.drained: "\(drained)",
            ])
        return offsets
    }

    // MARK: - The flow's state, read

    /// Partitions assigned to this worker now.
    public var partitionsAssigned: Int { flow.withLock { $0.partitionsAssigned } }
    /// Partitions given up since start (each one drained its jobs): under cooperative rebalancing only the ones
    /// that moved to another worker.
    public var partitionsRevokedTotal: Int { flow.withLock { $0.partitionsRevokedTotal } }

    /// Changes the flow; the gauges show its counts as of that change (under the lock, so two changes never
    /// record out of order).
    @discardableResult
    private func changeFlow<T: Sendable>(_ change: (inout PartitionFlow) -> T) -> T {
        flow.withLock { flow in
            let result = change(&flow)
            metrics.show(flow)
            return result
        }
    }

    // MARK: - Jobs

    /// The flow's decision once the broker answered for a job's events; a paused partition with room resumes.
    private func answered(_ job: CropJob, published: Bool, attempt: Int) -> PartitionFlow.AfterPublish {
        let next = changeFlow { $0.published(JobPosition(job), published, attempt: attempt) }
        switch next {
        case .finished(let resume?), .gaveUp(let resume?, _): consumer.resume([resume])
        case .finished, .gaveUp, .retry: break
        }
        return next
    }

    private func commitFinished(synchronously: Bool = false) {
        let offsets = flow.withLock { $0.committable() }
        guard !offsets.isEmpty else { return }
        do {
            if synchronously {
                try consumer.commit(offsets)
            } else {
                consumer.commitAsync(offsets)
            }
            flow.withLock { $0.committed(offsets) }
        } catch {
            metrics.commitFailed()
            logger.warning("offset commit failed", metadata: [LogKey.error: "\(error)"])
        }
    }
}
