import CropGeometry
import CropProtocol
import Database
import Foundation
import Imaging
import Logging
import RenderHelpers
import Storage

/// One job, start to finish, on a pool thread (docs/ARCHITECTURE.md §3): decode and validate the
/// request, consult the ledger, fetch the source, probe it, reserve memory, render,
/// upload, and publish in one database transaction. Every way it can end is a
/// `JobReport`; nothing here throws past `process`. This file is the job's order of steps; the steps are beside
/// it: the render (`+Render`), the publication (`+Publication`), the failures and the database calls
/// (`+Failures`).
public struct CropJobProcessor: Sendable {
    public struct Dependencies: Sendable {
        /// The limits a source must meet (`image.*`); the render runs where `renders` says (a helper process).
        public var limits: ImageLimits
        public var renders: Renders
        public var sources: any ObjectStore
        public var avatars: any ObjectStore
        public var database: PostgresClient
        public var budget: MemoryBudget
        /// Renders at once (`worker.render-slots`): a job holds a slot from its probe to the end of its render.
        public var renderSlots: RenderSlots
        /// Reading the source photo.
        public var fetchRetry: RetryPolicy
        /// Each storage write of the publication (versioned upload, copy onto the public key).
        public var uploadRetry: RetryPolicy
        /// Each database step (ledger checks, the publishing transaction).
        public var databaseRetry: RetryPolicy
        public var cacheControl: String
        public var logger: Logger
        /// `requested_at` further in the future than this is `INVALID_REQUEST` (`worker.max-clock-skew-seconds`).
        public var maxClockSkew: TimeInterval
        /// When set, a `source_key` outside the user's prefix is `INVALID_REQUEST` (`worker.source-key-template`).
        public var sourceKeyTemplate: SourceKeyTemplate?
        /// Renders of one job that may die with their worker before it fails as `PROCESSING_FAILED`
        /// (`worker.max-crash-attempts`).
        public var maxCrashAttempts: Int
        /// Longest wait for the user's lock, another worker publishing for the same user
        /// (`worker.user-lock-timeout-seconds`).
        public var userLockTimeout: Duration
        /// `storage.delete-source`: whether a job done with its source deletes it (`SourceDeletion`).
        public var deleteSource = SourceDeletion.never
        /// `storage.delete-source-delay-seconds`: how long after the last job done with it a source is deleted
        /// (`WorkerFactory` sets it from configuration).
        public var sourceDeletionDelay = Duration.zero
        /// The square of a request without a pose that does not choose (`image.default-crop`).
        public var defaultCrop = DefaultCrop.face
        /// The formats of a request that names none (`image.formats`; `image.extra-formats`, nil: the avatar's).
        public var formats: [AvatarFormat] = [.png]
        public var extraFormats: [AvatarFormat]?
        /// WebP's and AVIF's settings (`image.webp-quality`, `image.avif-quality`, `image.avif-speed`).
        public var encoder = EncoderSettings()
        /// TEST-ONLY (`JobTestSeams`): nil in production.
        public var testSeams: (any JobTestSeams)?
        /// Failures the ledger missed because the database was down; one instance per worker.
        public var unrecordedFailures = UnrecordedFailures()

        public init(
            limits: ImageLimits, renders: Renders, sources: any ObjectStore, avatars: any ObjectStore,
            database: PostgresClient,
            budget: MemoryBudget, renderSlots: RenderSlots, fetchRetry: RetryPolicy = RetryPolicy(),
            uploadRetry: RetryPolicy = RetryPolicy(),
            databaseRetry: RetryPolicy = RetryPolicy(), cacheControl: String, maxClockSkew: TimeInterval,
            maxCrashAttempts: Int, userLockTimeout: Duration, logger: Logger
        ) {
            self.maxClockSkew = maxClockSkew
            self.maxCrashAttempts = maxCrashAttempts
            self.userLockTimeout = userLockTimeout
            self.limits = limits
            self.renders = renders
            self.sources = sources
            self.avatars = avatars
            self.database = database
            self.budget = budget
            self.renderSlots = renderSlots
            self.fetchRetry = fetchRetry
            self.uploadRetry = uploadRetry
            self.databaseRetry = databaseRetry
            self.cacheControl = cacheControl
            self.logger = logger
        }
    }

    private(set) var dependencies: Dependencies
    var ledger: AvatarLedger { AvatarLedger(client: dependencies.database) }
    var publication: UserPublication {
        UserPublication(
            client: dependencies.database, avatars: dependencies.avatars, uploadRetry: dependencies.uploadRetry,
            cacheControl: dependencies.cacheControl, lockTimeout: dependencies.userLockTimeout,
            logger: dependencies.logger, testSeams: dependencies.testSeams)
    }

    public init(_ dependencies: Dependencies) {
        self.dependencies = dependencies
    }

    /// Runs the job `context` took up. Its deadline: once the pool's watchdog times the job out, libvips stops
    /// computing and the job commits nothing (its TIMEOUT result was already sent for it); a job already committing
    /// finishes and reports its own outcome (`JobDeadline`). Every line the job's steps log (retries, a dying helper,
    /// the publication's storage retries) is `context`'s logger's: it names the job and its trace.
    func process(_ context: JobContext) -> JobReport {
        let job = context.job
        let clock = ContinuousClock()
        let start = clock.now
        var trace = JobTrace()
        trace.record(.queueWait, from: job.receivedAt, to: start)
        let outcome: JobReport.Outcome
        do {
            let request: ValidatedCropRequest
            switch job.decoded {
            case .success(let decoded): request = decoded
            case .failure(let error): throw JobFailure(error)
            }
            context.logger.debug(
                "job started",
                metadata: [LogKey.queueWaitMilliseconds: "\(Int(trace.duration(of: .queueWait).milliseconds))"])
            var steps = self
            steps.dependencies.logger = context.logger
            outcome = .success(try steps.run(request, into: &trace, clock: clock, deadline: context.deadline))
        } catch let failure as JobFailure {
            outcome = .failure(failure)
            trace.firstFailedAt = recordFailure(failure, of: job, trace: trace)
        } catch {
            outcome = .failure(JobFailure(.internal, detail: "unexpected \(type(of: error))"))
        }
        var report = JobReport(job, outcome: outcome, trace: trace)
        report.trace.userForgotten = coveredByForget(report)
        scheduleSourceDeletion(of: report)
        report.trace.total = clock.now - start
        report.trace.finishedAt = Date()
        return report
    }

    private func run(
        _ request: ValidatedCropRequest, into trace: inout JobTrace, clock: ContinuousClock, deadline: JobDeadline?
    ) throws -> JobDisposition {
        let cancellation = deadline?.cancellation
        let logger = dependencies.logger

        do {
            try request.checkClock(now: Date(), maxSkew: dependencies.maxClockSkew)
            // A forget carries no source key.
            if request.kind == .crop { try request.checkSourceKey(dependencies.sourceKeyTemplate) }
        } catch {
            throw JobFailure(error)
        }
        if request.kind == .forget { return try forget(request, logger: logger) }

        let precheck = try databaseCall {
            try ledger.precheck(jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt)
        }
        // The database answers: failures it missed while it was down are written now, this job's first.
        writeUnrecordedFailures(first: request.jobID)
        switch precheck {
        case .foreignJobID:
            throw JobFailure.foreignJobID
        case .duplicate, .superseded:
            // Lost before rendering: settled (and the public avatar repaired) under the user's lock.
            return try settle(request, trace: &trace)
        case .proceed:
            postponeSourceDeletion(of: request)
        }

        let source = try measure(.fetch, &trace, clock) {
            do {
                return try dependencies.fetchRetry.run { _ throws(StorageError) in
                    // Size before bytes: over image.max-mb ends as TOO_LARGE without reading the body.
                    try dependencies.sources.get(request.sourceKey, maxBytes: dependencies.limits.maxBytes)
                }.value.data
            } catch let error as StorageError {
                throw JobFailure(source: error)
            }
        }
        // The render attempt is counted on its slot, just before the render: a worker killed while a job
        // only waited for a slot (or fetched) charges that job no crash.
        let rendering = try withRenderSlot(deadline: deadline, trace: &trace, clock: clock) {
            trace -> RenderResult? in
            guard let attempt = try markStarted(request) else { return nil }
            trace.renderAttempt = attempt
            return try render(request, source: source, cancellation: cancellation, trace: &trace, clock: clock)
        }
        guard let rendered = rendering else {
            // Another attempt of this job owns it now: settled under the user's lock.
            return try settle(request, trace: &trace)
        }
        trace.render = rendered

        // The avatar in its primary format first (its key is avatar_path), then every other rendition.
        let objects = ([rendered.avatar] + rendered.extras).map { rendition in
            UserPublication.Object(
                publicKey: AvatarKeys.avatarKey(userID: request.userID, size: rendition.size, format: rendition.format),
                data: rendition.data, contentType: rendition.format.contentType)
        }
        // Past the deadline the job was timed out: its render may have finished, but nothing is published.
        if cancellation?.isCancelled == true { throw JobFailure.timedOut }
        let disposition = try publish(
            request, objects: objects, blurHash: rendered.blurHash, trace: &trace,
            mayCommit: { deadline?.enterCommit() ?? true })
        if case .applied = disposition {
            trace.extraPaths = zip(rendered.extras, objects.dropFirst()).map {
                ($0.size, $1.publicKey, $0.format, $0.data.count)
            }
        }
        return disposition
    }

    /// Runs `body` as one step of `stage`.
    func measure<T>(
        _ stage: JobStage, _ trace: inout JobTrace, _ clock: ContinuousClock, _ body: () throws -> T
    ) throws -> T {
        let start = clock.now
        defer { trace.record(stage, from: start, to: clock.now) }
        return try body()
    }
}
