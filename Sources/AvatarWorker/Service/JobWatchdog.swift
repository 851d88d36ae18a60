import Dispatch
import Logging
import Synchronization

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
    private let logger: Logger
    private let runs = Mutex<[JobPosition: JobDeadline]>([:])

    init(jobTimeout: Duration, logger: Logger) {
        self.jobTimeout = jobTimeout
        self.logger = logger
    }

    /// The job's thread, as the job starts: its deadline, which `endJob` ends if the job is still running then.
    func begin(_ job: CropJob, endJob: @escaping EndJob) -> JobDeadline {
        let deadline = JobDeadline()
        runs.withLock { $0[JobPosition(job)] = deadline }
        DispatchQueue.global().asyncAfter(deadline: .now() + jobTimeout.seconds) { [self] in
            deadlinePassed(job, deadline, endJob: endJob)
        }
        return deadline
    }

    /// The job's thread, as the job returns: true if the thread ends the job (the watchdog did not).
    func end(_ job: CropJob, _ deadline: JobDeadline) -> Bool {
        forget(job, deadline)
        return deadline.claimOnReturn()
    }

    /// `job`'s deadline passed; `endJob` publishes its TIMEOUT if it is the watchdog's to end.
    private func deadlinePassed(_ job: CropJob, _ deadline: JobDeadline, endJob: @escaping EndJob) {
        // Gone: the job's thread returned before its deadline and ended the job.
        guard runs.withLock({ $0[JobPosition(job)] === deadline }) else { return }
        switch deadline.timeOut() {
        case .ended:
            return
        case .committing:
            logger.notice(
                "job passed its deadline inside its commit; its own result follows",
                metadata: [LogKey.jobID: "\(job.jobID ?? "-")"])
            DispatchQueue.global().asyncAfter(deadline: .now() + jobTimeout.seconds) { [self] in
                guard deadline.expire() else { return }
                forget(job, deadline)
                endJob(job, JobFailure.commitUnresolved)
            }
        case .timedOut:
            forget(job, deadline)
            endJob(job, JobFailure.timedOut)
        }
    }

    private func forget(_ job: CropJob, _ deadline: JobDeadline) {
        runs.withLock { runs in
            if runs[JobPosition(job)] === deadline { runs[JobPosition(job)] = nil }
        }
    }
}
