import Dispatch
import Foundation
import Imaging
import Logging
import Messaging
import ServiceLifecycle
import Synchronization

/// The worker (DESIGN §3): consumes crop requests, runs them on the key-ordered pool,
/// publishes their events and commits offsets only up to the lowest job not yet
/// finished. On SIGTERM or revocation it stops fetching, lets in-flight jobs finish
/// within a deadline, commits what finished and leaves; unfinished jobs are redelivered
/// to whoever takes the partition over, and the ledger makes the repeat harmless.
public final class AvatarWorkerService: Service, KafkaConsumerDelegate, Sendable {
    public struct Settings: Sendable {
        public var topic: String
        public var groupID: String
        public var kafka: KafkaConfiguration
        /// Renders at once (`worker.pool-width`).
        public var poolWidth: Int
        /// Jobs the pool runs at once (`worker.jobs-in-flight`, at least `poolWidth`): the ones without a
        /// render slot fetch, upload and commit meanwhile.
        public var jobsInFlight: Int
        public var maxBufferedPerPartition: Int
        public var drainDeadline: Duration
        public var commitInterval: Duration
        /// A job running past this ends as TIMEOUT and its thread is written off (`worker.job-timeout-seconds`).
        public var jobTimeout: Duration
        /// Written-off threads still stuck at which the worker leaves and exits non-zero (`worker.max-stuck-threads`).
        public var maxStuckThreads: Int

        public init(
            topic: String, groupID: String, kafka: KafkaConfiguration, poolWidth: Int, jobsInFlight: Int,
            maxBufferedPerPartition: Int, drainDeadline: Duration, commitInterval: Duration, jobTimeout: Duration,
            maxStuckThreads: Int
        ) {
            self.jobTimeout = jobTimeout
            self.maxStuckThreads = maxStuckThreads
            self.topic = topic
            self.groupID = groupID
            self.kafka = kafka
            self.poolWidth = poolWidth
            precondition(jobsInFlight >= poolWidth, "every render is a job in flight")
            self.jobsInFlight = jobsInFlight
            self.maxBufferedPerPartition = maxBufferedPerPartition
            self.drainDeadline = drainDeadline
            self.commitInterval = commitInterval
        }
    }

    private struct State {
        var tracker = OffsetTracker()
        var buffered: [TopicPartition: Int] = [:]
        var paused: Set<TopicPartition> = []
        var revoked: Set<TopicPartition> = []
        var stopping = false
        /// Why the worker stops itself (too many stuck threads): `run` throws it after draining, so the
        /// process exits non-zero and the orchestrator replaces it.
        var failure: WorkerFailure?
        /// The running jobs' deadlines (their render cancellation and who ends them), by message position.
        var runs: [JobPosition: JobDeadline] = [:]
        /// Set when shutdown starts: the one deadline drain and revocation share, so together they
        /// stay within `worker.drain-seconds` (revocation during `close()` gets what is left).
        var shutdownDeadline: Date?
    }

    public let settings: Settings
    private let processor: CropJobProcessor
    private let publisher: JobEventPublisher
    private let consumer: KafkaConsumer
    private let logger: Logger
    private let state = Mutex(State())
    private let scheduler: KeyOrderedScheduler<CropJob>
    public let health: WorkerHealth

    public init(
        settings: Settings, processor: CropJobProcessor, publisher: JobEventPublisher, health: WorkerHealth,
        logger: Logger
    ) throws {
        self.settings = settings
        self.processor = processor
        self.publisher = publisher
        self.health = health
        self.logger = logger
        var consumerConfiguration = settings.kafka
        consumerConfiguration.properties[Self.assignmentStrategyProperty] =
            settings.kafka.properties[Self.assignmentStrategyProperty] ?? Self.defaultAssignmentStrategy
        self.consumer = try KafkaConsumer(
            configuration: consumerConfiguration, groupID: settings.groupID, topics: [settings.topic], logger: logger)
        let box = SchedulerTarget()
        self.scheduler = KeyOrderedScheduler(
            width: settings.jobsInFlight, deadline: settings.jobTimeout,
            onDeadline: { job in box.service?.timedOut(job) },
            onStuckThreads: { count in box.service?.health.stuckThreads(count) },
            execute: { job in box.service?.execute(job) })
        box.service = self
    }

    /// Breaks the init-time cycle between the scheduler's closure and the service.
    private final class SchedulerTarget: @unchecked Sendable {
        // @unchecked Sendable: written once in init before any job can run, read-only after.
        weak var service: AvatarWorkerService?
    }

    // MARK: - Service

    public func run() async throws {
        consumer.run(delegate: self)
        logger.info(
            "worker started",
            metadata: ["pool_width": "\(settings.poolWidth)", "jobs_in_flight": "\(settings.jobsInFlight)"])
        await withGracefulShutdownHandler {
            while !Task.isCancelled && !state.withLock({ $0.stopping }) {
                try? await Task.sleep(for: settings.commitInterval)
                commitFinished()
            }
        } onGracefulShutdown: {
            self.state.withLock { $0.stopping = true }
        }
        await drain()
        if let failure = state.withLock({ $0.failure }) { throw failure }
    }

    /// Stops fetching, waits for running jobs up to the deadline, commits and leaves the group.
    private func drain() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // Blocking waits stay off the cooperative pool.
            Thread.detachNewThread { [self] in
                let deadline = Date().addingTimeInterval(settings.drainDeadline.seconds)
                state.withLock {
                    $0.stopping = true
                    $0.shutdownDeadline = deadline
                }
                health.draining()
                logger.info("draining: no new jobs")
                consumer.stopFetching()
                let abandoned = scheduler.stop()
                let drained = scheduler.wait(untilNoJobMatches: { _ in true }, deadline: deadline)
                if !drained || !abandoned.isEmpty {
                    logger.warning(
                        "left unfinished jobs for redelivery",
                        metadata: [
                            "queued": "\(abandoned.count)", "running": "\(scheduler.count.running)",
                        ])
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

    // MARK: - Readiness

    /// The `kafka` check of `/readyz` (`ConsumerReadiness`): never blocks.
    public func consumerReadiness() -> ReadinessCheck.Status {
        let interval =
            settings.kafka.properties["statistics.interval.ms"].flatMap(Int.init)
            .map { Duration.milliseconds($0) } ?? KafkaConsumer.defaultStatisticsInterval
        // Replacement threads keep the pool at its width, but a pool whose every place was lost to a
        // stuck C call is not one to send work to (and the worker exits at worker.max-stuck-threads).
        if health.stuckThreads >= settings.poolWidth {
            return .failed("\(health.stuckThreads) pool threads stuck past their job deadline")
        }
        return ConsumerReadiness.evaluate(
            draining: health.isDraining || state.withLock { $0.stopping },
            assignedPartitions: health.partitionsAssigned, statistics: consumer.latestStatistics,
            statisticsInterval: interval)
    }

    // MARK: - KafkaConsumerDelegate (called on the consumer's poll thread)

    public func consumer(_ consumer: KafkaConsumer, received message: KafkaMessage) {
        let job = CropJob(message: message, receivedAt: .now)
        let partition = job.partition
        let pause = state.withLock { state -> Bool in
            state.tracker.started(partition, offset: message.offset)
            state.buffered[partition, default: 0] += 1
            if state.buffered[partition]! >= settings.maxBufferedPerPartition && !state.paused.contains(partition) {
                state.paused.insert(partition)
                return true
            }
            return false
        }
        if pause { consumer.pause([partition]) }
        health.jobsInFlight(delta: 1)
        // Ordered by the canonical user id from the body, whatever the message key (DESIGN §3).
        scheduler.submit(key: job.orderingKey, job)
    }

    /// Cooperative incremental rebalancing (docs/ARCHITECTURE.md §3): when a worker joins or leaves, only the
    /// partitions that change owner are revoked and drained; the others keep running. A group cannot mix it with
    /// the eager assignors (`range`, `roundrobin`): `kafka.property.partition.assignment.strategy` overrides it.
    public static let defaultAssignmentStrategy = "cooperative-sticky"
    static let assignmentStrategyProperty = "partition.assignment.strategy"

    public func consumer(_ consumer: KafkaConsumer, assigned partitions: [TopicPartition]) {
        state.withLock { state in
            for partition in partitions { state.revoked.remove(partition) }
        }
        health.assigned(partitions.count)
        logger.info("partitions assigned", metadata: ["partitions": "\(partitions.map(\.partition))"])
    }

    public func consumer(_ consumer: KafkaConsumer, revoking partitions: [TopicPartition]) -> [TopicPartition: Int64] {
        let revoking = Set(partitions)
        // Jobs not started yet are given up; running ones may finish within the deadline.
        let abandoned = scheduler.removeQueued { revoking.contains($0.partition) }
        let deadline = Self.revocationDeadline(
            now: Date(), drain: settings.drainDeadline, shutdown: state.withLock { $0.shutdownDeadline })
        let drained = scheduler.wait(untilNoJobMatches: { revoking.contains($0.partition) }, deadline: deadline)
        // Their events were queued on the pool threads: let the broker confirm them so their
        // offsets can be committed before the partitions go.
        publisher.flush(timeout: .seconds(max(1, deadline.timeIntervalSinceNow)))
        health.jobsInFlight(delta: -abandoned.count)
        let offsets = state.withLock { state -> [TopicPartition: Int64] in
            // From here on, late confirmations of these partitions' jobs are ignored (a successor redoes them).
            state.revoked.formUnion(revoking)
            let committable = state.tracker.committable().filter { revoking.contains($0.key) }
            state.tracker.remove(partitions)
            for partition in partitions {
                state.buffered[partition] = nil
                state.paused.remove(partition)
            }
            return committable
        }
        health.revoked(partitions.count)
        logger.info(
            "partitions revoked",
            metadata: [
                "partitions": "\(partitions.map(\.partition))", "abandoned": "\(abandoned.count)",
                "drained": "\(drained)",
            ])
        return offsets
    }

    /// A revocation waits `drain` from now, but never past a shutdown already under way: drain
    /// and revocation share one budget (`worker.drain-seconds`), so the pod's grace period holds.
    static func revocationDeadline(now: Date, drain: Duration, shutdown: Date?) -> Date {
        let own = now.addingTimeInterval(drain.seconds)
        guard let shutdown else { return own }
        return min(own, shutdown)
    }

    // MARK: - Jobs (on pool threads)

    private func execute(_ job: CropJob) {
        let run = JobDeadline()
        let position = JobPosition(job)
        state.withLock { $0.runs[position] = run }
        let report = processor.process(job, deadline: run)
        state.withLock { state in
            if state.runs[position] === run { state.runs[position] = nil }
        }
        guard run.claimOnReturn() else {
            // Written off at its deadline (its TIMEOUT is already out): this thread is back, its report dropped.
            logger.notice("a written-off job's thread returned", metadata: [LogKey.jobID: "\(report.jobID ?? "-")"])
            return
        }
        // The pool thread moves on to the next render; the job finishes when the broker confirms its events.
        publish(report, for: job)
    }

    /// Events are tried `publishAttempts` times (0.5 s, 1 s, 2 s apart). A job whose events still could not be
    /// published would pin its partition: the worker then stops (commits what finished, leaves, exits
    /// non-zero), and a successor redoes the job, which the ledger turns into a no-op that publishes again.
    private func publish(_ report: JobReport, for job: CropJob, attempt: Int = 1) {
        publisher.publish(report, for: job) { [self] published in
            guard !published else { return finish(job, published: true) }
            health.publishFailed()
            guard attempt < Self.publishAttempts else {
                stopForReplacement(
                    "a job's events could not be published",
                    metadata: [LogKey.jobID: "\(report.jobID ?? "-")", "attempts": "\(attempt)"])
                return finish(job, published: false)
            }
            let delay = 0.5 * Double(1 << (attempt - 1))
            logger.warning(
                "a job's events were not confirmed, retrying",
                metadata: [LogKey.jobID: "\(report.jobID ?? "-")", "attempt": "\(attempt)", "delay_s": "\(delay)"])
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in
                publish(report, for: job, attempt: attempt + 1)
            }
        }
    }

    static let publishAttempts = 4

    /// The pool's watchdog found `job` past `worker.job-timeout-seconds` and wrote its thread off: unless the
    /// job finished at that very moment or is inside its commit, its render is cancelled (libvips' kill flag),
    /// it may no longer commit, and it ends as TIMEOUT (result + DLQ, transient), so its partition and its
    /// user move on. A job inside its commit ends itself when its thread returns (`JobDeadline`).
    private func timedOut(_ job: CropJob) {
        let run = state.withLock { $0.runs[JobPosition(job)] }
        let stuck = scheduler.stuckThreads
        if stuck >= settings.maxStuckThreads {
            stopForReplacement(
                "\(stuck) pool threads stuck past their job deadline", metadata: ["stuck_threads": "\(stuck)"])
        }
        // No run: the job's thread returned at this very moment; that thread ends the job.
        guard let run else { return }
        switch run.timeOut() {
        case .ended:
            return
        case .committing:
            logger.notice(
                "job passed its deadline inside its commit; its own result follows",
                metadata: [LogKey.jobID: "\(Self.jobID(of: job))"])
            DispatchQueue.global().asyncAfter(deadline: .now() + settings.jobTimeout.seconds) { [self] in
                guard run.expire() else { return }
                endAsTimedOut(job, run, failure: CropJobProcessor.commitUnresolved, stuck: scheduler.stuckThreads)
            }
        case .timedOut:
            endAsTimedOut(job, run, failure: CropJobProcessor.timedOut, stuck: stuck)
        }
    }

    /// Publishes the TIMEOUT of a job the watchdog ended; its thread's report, if it ever returns, is dropped.
    private func endAsTimedOut(_ job: CropJob, _ run: JobDeadline, failure: JobFailure, stuck: Int) {
        state.withLock { state in
            if state.runs[JobPosition(job)] === run { state.runs[JobPosition(job)] = nil }
        }
        health.jobTimedOut()
        var report = JobReport(outcome: .failed(failure))
        if case .success(let request) = job.decoded {
            report.jobID = request.jobID
            report.userID = request.userID
            report.request = request
        }
        logger.warning(
            "job timed out; its thread is written off",
            metadata: [LogKey.jobID: "\(report.jobID ?? "-")", "stuck_threads": "\(stuck)"])
        publish(report, for: job)
    }

    private static func jobID(of job: CropJob) -> String {
        if case .success(let request) = job.decoded { return request.jobID }
        return "-"
    }

    /// Stops the worker so the orchestrator replaces it: drain (commit what finished, leave the group), then
    /// `run` throws `reason`, and the process exits non-zero.
    private func stopForReplacement(_ reason: String, metadata: Logger.Metadata) {
        logger.critical("\(reason): committing, leaving the group and exiting for replacement", metadata: metadata)
        state.withLock { state in
            if state.failure == nil { state.failure = WorkerFailure(description: reason) }
            state.stopping = true
        }
    }

    /// A job's events were confirmed (or failed): its offset may now be committed.
    private func finish(_ job: CropJob, published: Bool) {
        health.jobsInFlight(delta: -1)
        let partition = job.partition
        let resume = state.withLock { state -> Bool in
            guard !state.revoked.contains(partition) else { return false }
            // Unpublished jobs are not finished: the offset stays uncommitted and the job is
            // redelivered to a successor, where the ledger turns it into a no-op that publishes again.
            if published { state.tracker.finished(partition, offset: job.message.offset) }
            state.buffered[partition, default: 1] -= 1
            if state.paused.contains(partition)
                && state.buffered[partition, default: 0] <= settings.maxBufferedPerPartition / 2
            {
                state.paused.remove(partition)
                return !state.stopping
            }
            return false
        }
        if resume { consumer.resume([partition]) }
    }

    private func commitFinished(synchronously: Bool = false) {
        let offsets = state.withLock { $0.tracker.committable() }
        guard !offsets.isEmpty else { return }
        do {
            if synchronously {
                try consumer.commit(offsets)
            } else {
                consumer.commitAsync(offsets)
            }
            state.withLock { $0.tracker.markCommitted(offsets) }
        } catch {
            health.commitFailed()
            logger.warning("offset commit failed", metadata: ["error": "\(error)"])
        }
    }
}

/// Where a job's message sits: identifies a running job for its deadline.
struct JobPosition: Hashable, Sendable {
    var partition: TopicPartition
    var offset: Int64

    init(_ job: CropJob) {
        partition = job.partition
        offset = job.message.offset
    }
}

/// The worker stopped itself (see `Settings.maxStuckThreads`).
public struct WorkerFailure: Error, CustomStringConvertible {
    public var description: String
}
