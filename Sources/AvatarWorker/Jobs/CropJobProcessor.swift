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
/// `JobReport`; nothing here throws past `process`.
public struct CropJobProcessor: Sendable {
    public struct Dependencies: Sendable {
        /// The render's limits and logger; the render itself runs where `renders` says (a helper process).
        public var renderer: AvatarRenderer
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
        /// TEST-ONLY (`JobTestSeams`): nil in production.
        public var testSeams: (any JobTestSeams)?
        /// Failures the ledger missed because the database was down; one instance per worker.
        public var unrecordedFailures = UnrecordedFailures()

        public init(
            renderer: AvatarRenderer, renders: Renders, sources: any ObjectStore, avatars: any ObjectStore,
            database: PostgresClient,
            budget: MemoryBudget, renderSlots: RenderSlots, fetchRetry: RetryPolicy = RetryPolicy(),
            uploadRetry: RetryPolicy = RetryPolicy(),
            databaseRetry: RetryPolicy = RetryPolicy(), cacheControl: String, maxClockSkew: TimeInterval,
            maxCrashAttempts: Int, userLockTimeout: Duration, logger: Logger
        ) {
            self.maxClockSkew = maxClockSkew
            self.maxCrashAttempts = maxCrashAttempts
            self.userLockTimeout = userLockTimeout
            self.renderer = renderer
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

    let dependencies: Dependencies
    private var ledger: AvatarLedger { AvatarLedger(client: dependencies.database) }
    var publication: UserPublication {
        UserPublication(
            client: dependencies.database, avatars: dependencies.avatars, uploadRetry: dependencies.uploadRetry,
            cacheControl: dependencies.cacheControl, lockTimeout: dependencies.userLockTimeout,
            logger: dependencies.logger, testSeams: dependencies.testSeams)
    }

    public init(_ dependencies: Dependencies) {
        self.dependencies = dependencies
    }

    /// `deadline` is the job's deadline: once the pool's watchdog times the job out, libvips stops computing
    /// and the job commits nothing (its TIMEOUT result was already sent for it); a job already committing
    /// finishes and reports its own outcome (`JobDeadline`).
    public func process(_ job: CropJob, deadline: JobDeadline? = nil) -> JobReport {
        let clock = ContinuousClock()
        let start = clock.now
        var trace = JobTrace()
        trace.queueWait = start - job.receivedAt
        trace.steps.append(JobStep(.queueWait, from: job.receivedAt, to: start))
        let outcome: JobReport.Outcome
        do {
            let request: ValidatedCropRequest
            switch job.decoded {
            case .success(let decoded): request = decoded
            case .failure(let error): throw JobFailure(error)
            }
            let traceParent = TraceParent(headers: job.message.headers)
            outcome = .success(
                try run(request, traceParent: traceParent, into: &trace, clock: clock, deadline: deadline),
                request: request)
        } catch let failure as JobFailure {
            outcome = .failure(failure)
            trace.firstFailedAt = recordFailure(failure, of: job, trace: trace)
        } catch {
            outcome = .failure(JobFailure(.internal, detail: "unexpected \(type(of: error))"))
        }
        var report = JobReport(job, outcome: outcome, trace: trace)
        scheduleSourceDeletion(of: report)
        report.trace.total = clock.now - start
        report.trace.finishedAt = Date()
        return report
    }

    private func run(
        _ request: ValidatedCropRequest, traceParent: TraceParent?, into trace: inout JobTrace,
        clock: ContinuousClock, deadline: JobDeadline?
    ) throws -> JobDisposition {
        let cancellation = deadline?.cancellation
        var logger = dependencies.logger
        logger[metadataKey: LogKey.jobID] = "\(request.jobID)"
        if let traceParent { logger[metadataKey: LogKey.traceID] = "\(traceParent.traceIDHex)" }

        do {
            try request.checkClock(now: Date(), maxSkew: dependencies.maxClockSkew)
            // A forget carries no source key.
            if request.kind == .crop { try request.checkSourceKey(dependencies.sourceKeyTemplate) }
        } catch {
            throw JobFailure(error)
        }
        if request.kind == .forget { return try forget(request, logger: logger) }

        var precheckAttempts = 0
        let precheck = try databaseCall(
            attempts: &precheckAttempts,
            {
                try ledger.precheck(jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt)
            })
        // The database answers: failures it missed while it was down are written now, this job's first.
        writeUnrecordedFailures(first: request.jobID)
        switch precheck {
        case .foreignJobID:
            throw Self.foreignJobID
        case .duplicate, .superseded:
            // Lost before rendering: settled (and the public avatar repaired) under the user's lock.
            return try settle(request, trace: &trace, logger: logger)
        case .proceed:
            postponeSourceDeletion(of: request)
        }

        let source = try measure(.fetch, &trace, clock) {
            do {
                return try dependencies.fetchRetry.run { _ throws(StorageError) in
                    // Size before bytes: over image.max-mb ends as TOO_LARGE without reading the body.
                    try dependencies.sources.get(request.sourceKey, maxBytes: dependencies.renderer.limits.maxBytes)
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
            return try settle(request, trace: &trace, logger: logger)
        }
        trace.render = rendered

        let path = AvatarKeys.avatarKey(userID: request.userID, size: request.outputSize, format: request.format)
        var objects = [
            UserPublication.Object(publicKey: path, data: rendered.avatar.data, contentType: request.format.contentType)
        ]
        for extra in rendered.extras {
            objects.append(
                UserPublication.Object(
                    publicKey: AvatarKeys.avatarKey(userID: request.userID, size: extra.size, format: request.format),
                    data: extra.data, contentType: request.format.contentType))
        }
        // Past the deadline the job was timed out: its render may have finished, but nothing is published.
        if cancellation?.isCancelled == true { throw Self.timedOut }
        let disposition = try publish(
            request, objects: objects, blurHash: rendered.blurHash, trace: &trace,
            mayCommit: { deadline?.enterCommit() ?? true })
        guard case .applied(let version, _) = disposition else { return note(disposition, logger: logger) }
        trace.extraPaths = zip(rendered.extras, objects.dropFirst()).map { ($0.size, $1.publicKey) }
        logger.info("avatar published", metadata: [LogKey.avatarVersion: "\(version)"])
        return disposition
    }

    /// A job past `worker.job-timeout-seconds` (transient: a replay may well succeed).
    static let timedOut = JobFailure(.timeout, detail: "the job ran past worker.job-timeout-seconds")

    /// A job whose commit had started at its deadline and still had not returned a whole deadline later.
    static let commitUnresolved = JobFailure(
        .timeout,
        detail: "the job's commit did not return within two job deadlines; a replay reports whether it was applied")

    /// A job id the ledger holds for another user: refused, never a duplicate of someone else's avatar.
    static let foreignJobID = JobFailure(
        .invalidRequest, errorClass: .permanent, detail: "the job id belongs to another user's job")

    /// Runs the user's publication (check → upload → bump → copy, one at a time per user across the fleet).
    /// `mayCommit` is asked just before the version bump; false (the job was timed out) commits nothing.
    private func publish(
        _ request: ValidatedCropRequest, objects: [UserPublication.Object]?, blurHash: String?,
        trace: inout JobTrace, mayCommit: () -> Bool = { true }
    ) throws -> JobDisposition {
        let clock = ContinuousClock()
        let start = clock.now
        let publication = publication
        var databaseAttempts = 0
        var storage = Duration.zero
        defer {
            let end = clock.now
            trace.latencies[.upload, default: .zero] += storage
            trace.latencies[.database, default: .zero] += end - start - storage
            trace.steps.append(JobStep(.publication, from: start, to: end))
        }
        let published = try databaseCall(attempts: &databaseAttempts) {
            let run = publication.run(
                jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt,
                objects: objects, blurHash: blurHash, mayCommit: mayCommit)
            storage += run.storageTime
            trace.steps += run.steps
            return try run.get()
        }
        trace.storageWrites = published.storageWrites
        return published.disposition
    }

    /// Settles a job found lost (duplicate or superseded) under the user's lock, repairing the public avatar.
    private func settle(
        _ request: ValidatedCropRequest, trace: inout JobTrace, logger: Logger
    ) throws -> JobDisposition {
        let disposition = try publish(request, objects: nil, blurHash: nil, trace: &trace)
        guard case .applied(let version, _) = disposition else { return note(disposition, logger: logger) }
        throw JobFailure(.internal, detail: "published version \(version) without a render")
    }

    /// Logs a job that did not publish.
    private func note(_ disposition: JobDisposition, logger: Logger) -> JobDisposition {
        switch disposition {
        case .applied: break
        case .duplicate: logger.info("job already succeeded, nothing to do")
        case .superseded: logger.info("a newer avatar is already published, nothing to do")
        case .forgotten: break
        }
        return disposition
    }

    // MARK: - Steps

    /// Runs `body` (probe and render: the job's CPU) holding one of the worker's render slots, so that only
    /// `worker.render-slots` jobs render at once while the others fetch, upload and commit. The wait counts as
    /// queue time. A job timed out while it waits ends as TIMEOUT without a slot.
    private func withRenderSlot<T>(
        deadline: JobDeadline?, trace: inout JobTrace, clock: ContinuousClock,
        _ body: (inout JobTrace) throws -> T
    ) throws -> T {
        let waitStart = clock.now
        guard
            let slot = dependencies.renderSlots.acquire(abandoned: { deadline?.cancellation.isCancelled == true })
        else { throw Self.timedOut }
        let acquired = clock.now
        trace.queueWait += acquired - waitStart
        trace.steps.append(JobStep(.renderSlotWait, from: waitStart, to: acquired))
        defer { slot.release() }
        if deadline?.cancellation.isCancelled == true { throw Self.timedOut }
        return try body(&trace)
    }

    /// The ledger's record that this job's render starts: the attempt's number, or nil when another attempt
    /// owns the job. Throws `PROCESSING_FAILED` for a job whose renders keep dying with their worker.
    private func markStarted(_ request: ValidatedCropRequest) throws -> Int? {
        var attempts = 0
        switch try databaseCall(
            attempts: &attempts,
            {
                try ledger.markStarted(
                    jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt,
                    maxCrashAttempts: dependencies.maxCrashAttempts)
            })
        {
        case .crashLooped(let attempts):
            throw JobFailure(
                .processingFailed, errorClass: .permanent, attempts: attempts,
                detail: "\(attempts) renders of this job died with their worker; not rendered again")
        case .notOwned:
            return nil
        case .render(let attempt):
            return attempt
        }
    }

    /// Probe, memory reservation and render, in a render helper (docs/ARCHITECTURE.md §3, "Render helpers"):
    /// what a render slot is held for. A helper that dies fails this job as `DECODE_FAILED`, once; one past the
    /// deadline is killed (`TIMEOUT`).
    private func render(
        _ request: ValidatedCropRequest, source: [UInt8], cancellation: RenderCancellation?,
        trace: inout JobTrace, clock: ContinuousClock
    ) throws -> RenderResult {
        let options = renderOptions(for: request)
        do {
            let session = try dependencies.renders.session(
                renderer: dependencies.renderer, seams: dependencies.testSeams?.renderSeams)
            defer { session.end() }
            let probed = try measure(.probe, &trace, clock) {
                try session.probe(source, input: request.input, options: options, cancellation: cancellation)
            }
            trace.header = probed.header

            guard let reservation = dependencies.budget.reserve(probed.estimate, forceFallback: options.forceFallback)
            else {
                throw JobFailure(.outOfMemory, detail: "no memory reservation")
            }
            defer { dependencies.budget.release(reservation) }
            trace.reservedBytes = reservation.bytes

            // The renderer itself retries on the thumbnail-resolution decode when libvips runs out of memory at
            // full resolution; the full reservation (the helper's address-space cap) covers that retry.
            let rendered = try measure(.render, &trace, clock) {
                try session.render(
                    fallback: reservation.mode == .fallback, reservedBytes: reservation.bytes,
                    cancellation: cancellation)
            }
            // The helper also encoded the renditions and the BlurHash: that is the encode stage, timed where it
            // ran, and not the render's (the stages are disjoint: crop_metrics.proto, StageLatency).
            let encoding = rendered.timings.encode + rendered.timings.blurHash
            trace.latencies[.render] = max(.zero, (trace.latencies[.render] ?? .zero) - encoding)
            trace.latencies[.encode] = encoding
            return rendered
        } catch let error as ImagingError {
            throw JobFailure(error)
        } catch let crash as RenderHelperCrash {
            dependencies.logger.warning(
                "the render helper died; the job fails, a new helper takes its place",
                metadata: [LogKey.jobID: "\(request.jobID)", LogKey.error: "\(crash)"])
            throw JobFailure(.decodeFailed, errorClass: .permanent, detail: crash.description)
        } catch let error as HelperSystemError {
            throw JobFailure(.internal, errorClass: .transient, detail: "render helper channel: \(error)")
        } catch let error as RenderHelperUnavailable {
            throw JobFailure(.internal, errorClass: .transient, detail: error.description)
        }
    }

    /// Best effort: the ledger notes the failure (it never overwrites a success or another user's row) and
    /// says when the job first failed. When the database is what failed, the result event and the DLQ record
    /// still carry everything.
    private func recordFailure(_ failure: JobFailure, of job: CropJob, trace: JobTrace) -> Date? {
        guard case .success(let request) = job.decoded else { return nil }
        let failedAt = Date()
        if failure.code != .databaseUnavailable {
            do {
                return try ledger.recordFailure(
                    jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt,
                    errorCode: failure.code.rawValue, attempts: failure.attempts, firstFailedAt: failedAt)
            } catch {
                dependencies.logger.debug(
                    "could not record the failure in the ledger", metadata: [LogKey.error: "\(error)"])
            }
        }
        // The row says `started`: unless it learns of this failure, the job's next attempt counts a crash.
        if let attempt = trace.renderAttempt {
            dependencies.unrecordedFailures.add(
                UnrecordedFailures.Note(
                    jobID: request.jobID, userID: request.userID, errorCode: failure.code.rawValue,
                    attempts: failure.attempts, failedAt: failedAt, renderAttempt: attempt))
        }
        return nil
    }

    /// Writes failures the ledger missed (`UnrecordedFailures`): `first`'s, then a few others. Stops at the
    /// first that cannot be written and keeps the rest for later.
    private func writeUnrecordedFailures(first jobID: String) {
        let notes = dependencies.unrecordedFailures.take(jobID: jobID)
        for (index, note) in notes.enumerated() {
            do {
                try ledger.recordLateFailure(note)
            } catch {
                for unwritten in notes[index...] { dependencies.unrecordedFailures.add(unwritten) }
                dependencies.logger.debug(
                    "could not write missed failures to the ledger", metadata: [LogKey.error: "\(error)"])
                return
            }
        }
    }

    private func renderOptions(for request: ValidatedCropRequest) -> RenderOptions {
        var options = RenderOptions(settings: request.editorSettings)
        options.format = request.format
        options.jpegQuality = request.quality
        if let background = request.background { options.background = background }
        options.extraSizes = request.extraSizes
        options.blurHash = request.wantBlurHash
        return options
    }

    /// Runs a database step, retrying transient failures with `databaseRetry`; `attempts` is set to the
    /// attempts made. A `JobFailure` from the step (bare or as a transaction's body error) passes through.
    func databaseCall<T>(attempts: inout Int, _ body: () throws -> T) throws -> T {
        var made = 0
        defer { attempts = made }
        do {
            return try dependencies.databaseRetry.run(
                { attempt in
                    made = attempt
                    return try body()
                },
                isTransient: { Self.databaseTransience($0) ?? false },
                onRetry: { error, attempt, _ in
                    dependencies.logger.warning(
                        "database step failed, retrying",
                        metadata: [LogKey.error: "\(error)", LogKey.attempt: "\(attempt)"])
                }
            ).value
        } catch {
            // A transaction wraps its body's error; a JobFailure from the body passes through.
            if let failure = (error as? PostgresTransactionError)?.closureError as? JobFailure { throw failure }
            if let failure = error as? JobFailure { throw failure }
            guard let transient = Self.databaseTransience(error) else { throw error }
            throw JobFailure(database: error, transient: transient, attempts: made)
        }
    }

    /// Whether a database error may pass on a retry; nil for errors that are not the database's.
    private static func databaseTransience(_ error: any Error) -> Bool? {
        (error as? DatabaseError)?.isTransient ?? (error as? PostgresTransactionError)?.isTransient
    }

    private func measure<T>(
        _ stage: JobStage, _ trace: inout JobTrace, _ clock: ContinuousClock, _ body: () throws -> T
    ) throws -> T {
        let start = clock.now
        defer {
            let end = clock.now
            trace.latencies[stage, default: .zero] += end - start
            if let step = JobStep.Name(rawValue: stage.rawValue) {
                trace.steps.append(JobStep(step, from: start, to: end))
            }
        }
        return try body()
    }
}
