import Dispatch
import Logging

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
        let taken = JobContext(job, span: tracing.begin(job), logger: logger)
        let deadline = watchdog.begin(job, logger: taken.logger) { [self] _, failure in timedOut(failure, taken) }
        var context = taken
        context.deadline = deadline
        let report = processor.process(context)
        guard watchdog.end(deadline) else {
            // Ended at its deadline (its TIMEOUT is already out): its report is dropped.
            context.logger.notice("a timed-out job's thread returned")
            return
        }
        publish(report, context, span: tracing.trace(context, report))
    }

    /// The watchdog ended the job at its deadline.
    private func timedOut(_ failure: JobFailure, _ context: JobContext) {
        metrics.jobTimedOut()
        context.logger.warning("job timed out; its render stopped")
        let report = JobReport(context.job, failure: failure)
        publish(report, context, span: tracing.trace(context, report))
    }

    /// `span`: the job's trace (`JobTracing`), ended once the broker answered for good.
    private func publish(_ report: JobReport, _ context: JobContext, span: JobSpan?, attempt: Int = 1) {
        publisher.publish(report, context) { [self] published in
            if !published { metrics.publishFailed() }
            switch answered(context.job, published, attempt) {
            case .finished:
                span?.finish(published: published, attempts: attempt)
            case .retry(let delay):
                context.logger.warning(
                    "a job's events were not confirmed, retrying",
                    metadata: [LogKey.attempt: "\(attempt)", LogKey.delaySeconds: "\(delay.seconds)"])
                DispatchQueue.global().asyncAfter(deadline: .now() + delay.seconds) { [self] in
                    publish(report, context, span: span, attempt: attempt + 1)
                }
            case .gaveUp(_, let failure):
                span?.finish(published: false, attempts: attempt)
                context.logger.critical(
                    "\(failure.description): committing, leaving the group and exiting for replacement",
                    metadata: [LogKey.attempts: "\(attempt)"])
            }
        }
    }
}
