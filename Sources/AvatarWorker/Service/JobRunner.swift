import Dispatch
import Logging
import Tracing

/// The pool's side of a job (docs/ARCHITECTURE.md §3): runs it under its deadline, publishes its events and,
/// when the broker answers, asks the flow what next (`answered`): done, publish again after a delay, or give
/// up. A job the watchdog ends publishes its TIMEOUT from here too.
final class JobRunner: Sendable {
    /// The flow's decision once the broker answered for attempt `attempt` (1-based) of a job's events.
    typealias Answered = @Sendable (_ job: CropJob, _ published: Bool, _ attempt: Int) -> PartitionFlow.AfterPublish

    private let processor: CropJobProcessor
    private let publisher: JobEventPublisher
    private let watchdog: JobWatchdog
    private let metrics: WorkerMetrics
    private let logger: Logger
    private let answered: Answered
    private let tracing: JobTracing

    init(
        processor: CropJobProcessor, publisher: JobEventPublisher, watchdog: JobWatchdog, metrics: WorkerMetrics,
        tracing: JobTracing, logger: Logger, answered: @escaping Answered
    ) {
        self.tracing = tracing
        self.processor = processor
        self.publisher = publisher
        self.watchdog = watchdog
        self.metrics = metrics
        self.logger = logger
        self.answered = answered
    }

    /// Runs `job` on the calling pool thread; the thread moves on to the next job once the events are queued.
    func execute(_ job: CropJob) {
        let span = tracing.begin(job)
        // The trace the job runs in: its own span's, else (tracing off) the request's.
        let traceID = span.flatMap(JobTracing.traceID(of:)) ?? TraceParent(headers: job.message.headers)?.traceIDHex
        var jobLogger = self.logger
        jobLogger[metadataKey: LogKey.jobID] = "\(job.jobID ?? "-")"
        if let traceID { jobLogger[metadataKey: LogKey.traceID] = "\(traceID)" }
        let logger = jobLogger
        let deadline = watchdog.begin(job, logger: logger) { [self] job, failure in
            timedOut(job, failure, span: span, logger: logger)
        }
        let report = processor.process(job, deadline: deadline, traceID: traceID)
        guard watchdog.end(deadline) else {
            // Ended at its deadline (its TIMEOUT is already out): its report is dropped.
            logger.notice("a timed-out job's thread returned")
            return
        }
        publish(report, for: job, span: tracing.trace(span, job, report))
    }

    /// The watchdog ended `job` at its deadline.
    private func timedOut(_ job: CropJob, _ failure: JobFailure, span: (any Span)?, logger: Logger) {
        metrics.jobTimedOut()
        logger.warning("job timed out; its render stopped")
        let report = JobReport(job, failure: failure)
        publish(report, for: job, span: tracing.trace(span, job, report))
    }

    /// `span`: the job's trace (`JobTracing`), ended once the broker answered for good.
    private func publish(_ report: JobReport, for job: CropJob, span: JobSpan?, attempt: Int = 1) {
        let trace = span?.headers ?? JobTracing.requestHeaders(job.message)
        publisher.publish(report, for: job, trace: trace) { [self] published in
            if !published { metrics.publishFailed() }
            switch answered(job, published, attempt) {
            case .finished:
                span?.finish(published: published, attempts: attempt)
            case .retry(let delay):
                logger.warning(
                    "a job's events were not confirmed, retrying",
                    metadata: [
                        LogKey.jobID: "\(job.jobID ?? "-")", LogKey.attempt: "\(attempt)",
                        LogKey.delaySeconds: "\(delay.seconds)",
                    ])
                DispatchQueue.global().asyncAfter(deadline: .now() + delay.seconds) { [self] in
                    publish(report, for: job, span: span, attempt: attempt + 1)
                }
            case .gaveUp(_, let failure):
                span?.finish(published: false, attempts: attempt)
                logger.critical(
                    "\(failure.description): committing, leaving the group and exiting for replacement",
                    metadata: [LogKey.jobID: "\(job.jobID ?? "-")", LogKey.attempts: "\(attempt)"])
            }
        }
    }
}
