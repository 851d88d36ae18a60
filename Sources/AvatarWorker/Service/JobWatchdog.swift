import Dispatch
import Logging

/// Ends jobs that run past `worker.job-timeout-seconds` (docs/ARCHITECTURE.md §3, "nothing stalls the
/// flow"). Each running job has a `JobDeadline` and a timer; when the timer fires, `deadlinePassed` decides, once,
/// who ends the job: unless the job finished at that very moment or is inside its commit, its render is cancelled
/// (its render helper killed, so its thread comes back at once and its render slot is free), it may no longer
/// commit, and it ends as TIMEOUT (result + DLQ, transient), so its partition and its user move on. A job inside
/// its commit ends itself when its thread returns; only one still not back a whole deadline later is ended as a
/// TIMEOUT whose outcome is unknown.
final class JobWatchdog: Sendable {
    /// Ends a job as timed out (its TIMEOUT is published by the service).
    typealias EndJob = @Sendable (CropJob, JobFailure) -> Void

    private let jobTimeout: Duration

    init(jobTimeout: Duration) {
        self.jobTimeout = jobTimeout
    }

    /// The job's thread, as the job starts: its deadline, which `endJob` ends if the job is still running then.
    /// The deadline is the one record of the running job's state: the timer holds it, and finds it ended if the
    /// job's thread got there first. `logger` names the job.
    func begin(_ job: CropJob, logger: Logger, endJob: @escaping EndJob) -> JobDeadline {
        let deadline = JobDeadline()
        DispatchQueue.global().asyncAfter(deadline: .now() + jobTimeout.seconds) { [self] in
            deadlinePassed(job, deadline, logger: logger, endJob: endJob)
        }
        return deadline
    }

    /// The job's thread, as the job returns: true if the thread ends the job (the watchdog did not).
    func end(_ deadline: JobDeadline) -> Bool {
        deadline.claimOnReturn()
    }

    /// `job`'s deadline passed; `endJob` publishes its TIMEOUT if it is the watchdog's to end.
    private func deadlinePassed(
        _ job: CropJob, _ deadline: JobDeadline, logger: Logger, endJob: @escaping EndJob
    ) {
        switch deadline.timeOut() {
        case .ended:
            // The job's thread returned before its deadline and ended the job.
            return
        case .committing:
            logger.notice("job passed its deadline inside its commit; its own result follows")
            DispatchQueue.global().asyncAfter(deadline: .now() + jobTimeout.seconds) {
                guard deadline.expire() else { return }
                endJob(job, JobFailure.commitUnresolved)
            }
        case .timedOut:
            endJob(job, JobFailure.timedOut)
        }
    }
}
