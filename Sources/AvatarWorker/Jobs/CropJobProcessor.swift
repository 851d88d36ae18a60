import CropGeometry
import CropProtocol
import Database
import Foundation
import Imaging
import Logging
import Storage

/// One job, start to finish, on a pool thread (DESIGN §3): decode and validate the
/// request, consult the ledger, fetch the source, probe it, reserve memory, render,
/// upload, and publish in one database transaction. Every way it can end is a
/// `JobReport`; nothing here throws past `process`.
public struct CropJobProcessor: Sendable {
    public struct Dependencies: Sendable {
        public var renderer: AvatarRenderer
        public var sources: any ObjectStore
        public var avatars: any ObjectStore
        public var database: PostgresClient
        public var budget: MemoryBudget
        public var uploadRetry: RetryPolicy
        public var databaseRetry: RetryPolicy
        public var cacheControl: String
        public var logger: Logger

        public init(
            renderer: AvatarRenderer, sources: any ObjectStore, avatars: any ObjectStore, database: PostgresClient,
            budget: MemoryBudget, uploadRetry: RetryPolicy = RetryPolicy(), databaseRetry: RetryPolicy = RetryPolicy(),
            cacheControl: String, logger: Logger
        ) {
            self.renderer = renderer
            self.sources = sources
            self.avatars = avatars
            self.database = database
            self.budget = budget
            self.uploadRetry = uploadRetry
            self.databaseRetry = databaseRetry
            self.cacheControl = cacheControl
            self.logger = logger
        }
    }

    let dependencies: Dependencies
    private var ledger: AvatarLedger { AvatarLedger(client: dependencies.database) }

    public init(_ dependencies: Dependencies) {
        self.dependencies = dependencies
    }

    public func process(_ job: CropJob) -> JobReport {
        let clock = ContinuousClock()
        let start = clock.now
        var report = JobReport(outcome: .superseded)
        report.queueWait = start - job.receivedAt
        do {
            report.outcome = try run(job, into: &report, clock: clock)
        } catch let failure as JobFailure {
            report.outcome = .failed(failure)
            recordFailure(failure, report: report)
        } catch {
            report.outcome = .failed(JobFailure(.internal, detail: "unexpected \(type(of: error))"))
        }
        report.total = clock.now - start
        report.finishedAt = Date()
        return report
    }

    private func run(_ job: CropJob, into report: inout JobReport, clock: ContinuousClock) throws -> JobReport.Outcome {
        var logger = dependencies.logger
        let request = try decode(job, into: &report)
        logger[metadataKey: LogKey.jobID] = "\(request.jobID)"

        var precheckAttempts = 0
        switch try databaseCall(
            attempts: &precheckAttempts,
            {
                try ledger.precheck(jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt)
            })
        {
        case .alreadySucceeded(let version, let path):
            logger.info("job already succeeded, nothing to do")
            return .duplicate(version: version, path: path)
        case .superseded:
            logger.info("a newer avatar is already published, nothing to do")
            try? ledger.recordSuperseded(jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt)
            return .superseded
        case .proceed:
            break
        }

        let source = try measure(.fetch, &report, clock) {
            do {
                return try dependencies.uploadRetry.run { _ throws(StorageError) in
                    // Size before bytes: over image.max-mb ends as TOO_LARGE without reading the body.
                    try dependencies.sources.get(request.sourceKey, maxBytes: dependencies.renderer.limits.maxBytes)
                }.value.data
            } catch let error as StorageError {
                throw JobFailure(source: error)
            }
        }
        let header = try measure(.probe, &report, clock) {
            do { return try dependencies.renderer.probe(source) } catch let error as ImagingError {
                throw JobFailure(error)
            }
        }
        report.header = header

        let options = renderOptions(for: request)
        let estimate = MemoryAdmission.estimate(header: header, options: options, input: request.input)
        guard let reservation = dependencies.budget.reserve(estimate, forceFallback: options.forceFallback) else {
            throw JobFailure(.outOfMemory, detail: "no memory reservation")
        }
        defer { dependencies.budget.release(reservation) }
        report.reservedBytes = reservation.bytes

        // AvatarRenderer itself retries on the thumbnail-resolution decode when libvips runs out
        // of memory at full resolution; the full reservation covers that retry.
        let rendered = try measure(.render, &report, clock) {
            do {
                return try dependencies.renderer.render(
                    source, header: header, input: request.input, options: options,
                    fallback: reservation.mode == .fallback)
            } catch let error as ImagingError {
                throw JobFailure(error)
            }
        }
        report.render = rendered
        report.latencies[.encode] = rendered.timings.encode

        let path = AvatarKeys.avatarKey(userID: request.userID, size: request.outputSize, format: request.format)
        let (uploadAttempts, extraPaths) = try measure(.upload, &report, clock) {
            var attempts = try upload(rendered.avatar.data, to: path, format: request.format)
            var extraPaths: [(size: Int, path: String)] = []
            for extra in rendered.extras {
                let extraPath = AvatarKeys.avatarKey(userID: request.userID, size: extra.size, format: request.format)
                attempts += try upload(extra.data, to: extraPath, format: request.format)
                extraPaths.append((extra.size, extraPath))
            }
            return (attempts, extraPaths)
        }
        report.uploadAttempts = uploadAttempts
        report.extraPaths = extraPaths

        var databaseAttempts = 0
        let applied = try measure(.database, &report, clock) {
            try databaseCall(attempts: &databaseAttempts) {
                try ledger.apply(
                    jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt, path: path,
                    blurHash: rendered.blurHash, attempts: 1)
            }
        }
        switch applied {
        case .published(let version):
            logger.info("avatar published", metadata: [LogKey.avatarVersion: "\(version)"])
            return .applied(version: version, path: path)
        case .alreadySucceeded(let version, let path):
            return .duplicate(version: version, path: path)
        case .superseded:
            return .superseded
        }
    }

    // MARK: - Steps

    /// Best effort: the ledger notes the failure (it never overwrites a success). When the
    /// database is what failed, the result event and the DLQ record still carry everything.
    private func recordFailure(_ failure: JobFailure, report: JobReport) {
        guard let request = report.request, failure.code != .databaseUnavailable else { return }
        do {
            try ledger.recordFailure(
                jobID: request.jobID, userID: request.userID, requestedAt: request.requestedAt,
                errorCode: failure.code.rawValue, attempts: failure.attempts, firstFailedAt: Date())
        } catch {
            dependencies.logger.debug("could not record the failure in the ledger", metadata: ["error": "\(error)"])
        }
    }

    private func decode(_ job: CropJob, into report: inout JobReport) throws -> ValidatedCropRequest {
        do {
            let message = try CropCodec.decodeRequest(
                job.message.value, contentType: job.message.headerString(MessageHeader.contentType))
            let request = try ValidatedCropRequest(message)
            report.jobID = request.jobID
            report.userID = request.userID
            report.request = request
            return request
        } catch {
            report.jobID = error.jobID ?? job.message.headerString(MessageHeader.jobID)
            report.userID = error.userID
            throw JobFailure(error)
        }
    }

    private func renderOptions(for request: ValidatedCropRequest) -> RenderOptions {
        var options = RenderOptions(settings: request.editorSettings)
        options.format = request.format == .jpeg ? .jpeg : .png
        options.jpegQuality = request.quality
        if let background = request.background { options.background = background }
        options.extraSizes = request.extraSizes
        options.blurHash = request.wantBlurHash
        return options
    }

    /// Uploads with retries; returns the attempts made. On total failure nothing in
    /// Postgres changes, so the previous avatar stays.
    private func upload(_ data: [UInt8], to key: String, format: AvatarFormat) throws -> Int {
        let options = PutOptions(contentType: format.contentType, cacheControl: dependencies.cacheControl)
        do {
            return try dependencies.uploadRetry.run(
                { _ throws(StorageError) in
                    try dependencies.avatars.put(key, data: data, options: options)
                },
                onRetry: { error, attempt, delay in
                    dependencies.logger.warning(
                        "upload failed, retrying",
                        metadata: ["error": "\(error)", "attempt": "\(attempt)", "delay": "\(delay)"])
                }
            ).attempts
        } catch {
            throw JobFailure(upload: error)
        }
    }

    /// Runs a database step, retrying transient failures with the database retry policy.
    private func databaseCall<T>(attempts: inout Int, _ body: () throws -> T) throws -> T {
        let policy = dependencies.databaseRetry
        var attempt = 0
        while true {
            attempt += 1
            attempts = attempt
            do {
                return try body()
            } catch {
                // A transaction wraps its body's error; a JobFailure from the body passes through.
                if let failure = (error as? PostgresTransactionError)?.closureError as? JobFailure { throw failure }
                let transient =
                    (error as? DatabaseError)?.isTransient ?? (error as? PostgresTransactionError)?.isTransient
                guard let transient else { throw error }
                guard transient, attempt < policy.maxAttempts else {
                    throw JobFailure(database: error, transient: transient, attempts: attempt)
                }
                dependencies.logger.warning("database step failed, retrying", metadata: ["error": "\(error)"])
                policy.sleep(policy.delay(afterAttempt: attempt))
            }
        }
    }

    private func measure<T>(
        _ stage: JobStage, _ report: inout JobReport, _ clock: ContinuousClock, _ body: () throws -> T
    ) throws -> T {
        let start = clock.now
        defer { report.latencies[stage, default: .zero] += clock.now - start }
        return try body()
    }
}
