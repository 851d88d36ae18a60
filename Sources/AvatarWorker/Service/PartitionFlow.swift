import Foundation
import Messaging

/// The worker's flow control as a pure value (docs/ARCHITECTURE.md §3): events in — a message arrived, a
/// job returned, its events were confirmed or not, partitions were assigned or revoked, shutdown began, a
/// commit tick — and actions out — run, pause, resume, commit, publish or retry, stop. It holds the one
/// record of which jobs the worker has (`jobsInFlight`, the per-partition backlog) and of which offsets
/// may be committed (only up to the lowest job not yet finished), so nothing is counted twice.
///
/// No broker, thread or clock inside: `AvatarWorkerService` keeps it behind a lock and carries out what it
/// returns; the tests drive it directly.
struct PartitionFlow: Sendable {
    struct Settings: Sendable {
        /// Jobs held per partition at which it is paused; it resumes at half (`worker.max-buffered-per-partition`).
        var maxBufferedPerPartition: Int
        /// How long drain and revocation wait for running jobs, together (`worker.drain-seconds`).
        var drainDeadline: Duration
        /// How a job's events are retried before the worker gives up and stops for replacement.
        var publishRetry: RetryPolicy
    }

    /// The default `Settings.publishRetry`: 4 attempts, 0.5 s, 1 s then 2 s apart.
    /// The service waits between attempts without blocking a thread (`RetryPolicy.delay(afterAttempt:)`).
    static let publishRetry = RetryPolicy(delays: [.milliseconds(500), .seconds(1), .seconds(2)], maxAttempts: 4)

    let settings: Settings
    /// Offsets handed out and finished, per assigned partition: what may be committed.
    private var offsets = OffsetTracker()
    /// The jobs the worker holds (received, events not yet confirmed), per assigned partition.
    private var held: [TopicPartition: Set<Int64>] = [:]
    /// Jobs of revoked partitions still running: counted until they return, never committed here.
    private var leftovers: Set<JobPosition> = []
    private var paused: Set<TopicPartition> = []
    /// Partitions given up since start (each one drained its jobs first): under cooperative rebalancing only the
    /// ones that moved to another worker.
    private(set) var partitionsRevokedTotal = 0
    /// Where the worker is in its life: every stop rule reads and writes this one value.
    private(set) var lifecycle = Lifecycle.running

    /// The worker's life, from fetching to leaving: one value, so no stop rule can see half a shutdown.
    enum Lifecycle: Equatable, Sendable {
        /// Fetching and running jobs.
        case running
        /// A failure stops the worker for replacement (`stop(reason:)`): it fetches nothing more; the drain
        /// has not begun yet.
        case failed(WorkerFailure)
        /// Shutting down (SIGTERM, or after a failure): no new jobs; drain and revocation share `deadline`.
        case draining(deadline: Date, failure: WorkerFailure?)
    }

    /// True once the worker stops fetching (shutdown, or a failure that stops it for replacement).
    var stopping: Bool { lifecycle != .running }

    /// Why the worker stops itself: `run` throws it after draining, so the process exits non-zero.
    var failure: WorkerFailure? {
        switch lifecycle {
        case .running: nil
        case .failed(let failure): failure
        case .draining(_, let failure): failure
        }
    }

    /// Set when shutdown starts: the one deadline drain and revocation share, so together they stay within
    /// `worker.drain-seconds` (a revocation during `close()` gets what is left).
    var shutdownDeadline: Date? {
        if case .draining(let deadline, _) = lifecycle { return deadline }
        return nil
    }

    init(settings: Settings) {
        self.settings = settings
    }

    // MARK: - Counts, all derived from `held` and `leftovers`

    /// Jobs received and not finished, over all partitions (revoked ones' running jobs included).
    var jobsInFlight: Int { held.values.reduce(leftovers.count) { $0 + $1.count } }

    /// Partitions assigned to this worker now.
    var partitionsAssigned: Int { held.count }

    /// Jobs of `partition` received and not finished.
    func backlog(_ partition: TopicPartition) -> Int { held[partition]?.count ?? 0 }

    func isPaused(_ partition: TopicPartition) -> Bool { paused.contains(partition) }

    // MARK: - Events

    /// A message arrived: the job runs, and its partition pauses when its backlog reaches the limit.
    mutating func received(_ position: JobPosition) -> Pause? {
        let partition = position.partition
        offsets.started(partition, offset: position.offset)
        held[partition, default: []].insert(position.offset)
        guard backlog(partition) >= settings.maxBufferedPerPartition, !paused.contains(partition) else { return nil }
        paused.insert(partition)
        return Pause(partition: partition)
    }

    /// Pause this partition (backpressure): stop fetching it, drop nothing.
    struct Pause: Equatable, Sendable {
        var partition: TopicPartition
    }

    /// What to do once the broker answered for a job's events.
    enum AfterPublish: Equatable, Sendable {
        /// Finished; `resume` if its partition was paused and has room again.
        case finished(resume: TopicPartition?)
        /// Not confirmed: publish again after `delay`.
        case retry(after: Duration)
        /// Not confirmed after the last attempt: the job stays unfinished (its offset uncommitted, so a
        /// successor redoes it and the ledger turns the repeat into a no-op that publishes again), and the
        /// worker stops for replacement, because that offset would pin its partition.
        case gaveUp(resume: TopicPartition?, failure: WorkerFailure)
    }

    /// The broker confirmed (`published`) or failed attempt `attempt` (1-based) of a job's events.
    mutating func published(_ position: JobPosition, _ published: Bool, attempt: Int) -> AfterPublish {
        if published { return .finished(resume: finish(position, committable: true)) }
        let retry = settings.publishRetry
        guard attempt >= max(1, retry.maxAttempts) else { return .retry(after: retry.delay(afterAttempt: attempt)) }
        let failure = stop(reason: "a job's events could not be published")
        return .gaveUp(resume: finish(position, committable: false), failure: failure)
    }

    /// Forgets a job the worker no longer holds. Only a published job's offset may be committed. Returns the
    /// partition to resume, if the job's partition was paused and is now down to half its limit.
    private mutating func finish(_ position: JobPosition, committable: Bool) -> TopicPartition? {
        // A job of a revoked partition: a successor redoes it, nothing of it is committed here.
        if leftovers.remove(position) != nil { return nil }
        let partition = position.partition
        guard held[partition]?.remove(position.offset) != nil else { return nil }
        if committable { offsets.finished(partition, offset: position.offset) }
        guard paused.contains(partition), backlog(partition) <= settings.maxBufferedPerPartition / 2 else {
            return nil
        }
        paused.remove(partition)
        return stopping ? nil : partition
    }

    /// Partitions were assigned to this worker.
    mutating func assigned(_ partitions: [TopicPartition]) {
        for partition in partitions where held[partition] == nil { held[partition] = [] }
    }

    /// How long a revocation of partitions may wait for their running jobs: `drainDeadline` from `now`,
    /// but never past a shutdown already under way, so drain and revocation share one budget.
    func revocationDeadline(now: Date) -> Date {
        Self.revocationDeadline(now: now, drain: settings.drainDeadline, shutdown: shutdownDeadline)
    }

    static func revocationDeadline(now: Date, drain: Duration, shutdown: Date?) -> Date {
        let own = now.addingTimeInterval(drain.seconds)
        guard let shutdown else { return own }
        return min(own, shutdown)
    }

    /// The partitions are gone, after their running jobs had until the revocation deadline: returns the
    /// offsets to commit for them (what finished). Their jobs not started (`abandoned`) are dropped; those
    /// still running are leftovers whose late results commit nothing.
    mutating func revoked(_ partitions: [TopicPartition], abandoned: [JobPosition]) -> [TopicPartition: Int64] {
        let revoking = Set(partitions)
        let commit = offsets.committable().filter { revoking.contains($0.key) }
        offsets.remove(partitions)
        for position in abandoned { held[position.partition]?.remove(position.offset) }
        for partition in partitions {
            for offset in held.removeValue(forKey: partition) ?? [] {
                leftovers.insert(JobPosition(partition: partition, offset: offset))
            }
            paused.remove(partition)
        }
        partitionsRevokedTotal += partitions.count
        return commit
    }

    /// Shutdown (SIGTERM, or a failure) begins: no new jobs; returns the drain's deadline.
    mutating func beginDrain(now: Date) -> Date {
        switch lifecycle {
        case .draining(let deadline, _):
            return deadline
        case .running, .failed:
            let deadline = now.addingTimeInterval(settings.drainDeadline.seconds)
            lifecycle = .draining(deadline: deadline, failure: failure)
            return deadline
        }
    }

    /// The worker must stop and be replaced (`reason` is logged and becomes the process's failure). The first
    /// reason is kept.
    @discardableResult
    mutating func stop(reason: String) -> WorkerFailure {
        if let failure { return failure }
        let failure = WorkerFailure(description: reason)
        switch lifecycle {
        case .running, .failed: lifecycle = .failed(failure)
        case .draining(let deadline, _): lifecycle = .draining(deadline: deadline, failure: failure)
        }
        return failure
    }

    /// A commit tick: the offsets that advanced since the last commit (empty: nothing to do).
    func committable() -> [TopicPartition: Int64] {
        offsets.committable()
    }

    /// The broker accepted the commit of `committed`.
    mutating func committed(_ committed: [TopicPartition: Int64]) {
        offsets.markCommitted(committed)
    }
}

/// Where a job's message sits: identifies a job from its arrival to its commit.
struct JobPosition: Hashable, Sendable {
    var partition: TopicPartition
    var offset: Int64

    init(partition: TopicPartition, offset: Int64) {
        self.partition = partition
        self.offset = offset
    }

    init(_ job: CropJob) {
        self.init(partition: job.partition, offset: job.message.offset)
    }
}

/// The worker stopped itself (events that could not be published).
public struct WorkerFailure: Error, Equatable, CustomStringConvertible {
    public var description: String
}
