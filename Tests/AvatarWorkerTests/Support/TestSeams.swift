import AvatarWorker

/// Seams a test sets in-process (`JobTestSeams`): closures run with the job id at the commit's edges.
struct TestSeams: JobTestSeams {
    var beforeCommit: (@Sendable (String) -> Void)?
    var whileCommitting: (@Sendable (String) -> Void)?
    var afterCommit: (@Sendable (String) -> Void)?

    init(
        beforeCommit: (@Sendable (String) -> Void)? = nil, whileCommitting: (@Sendable (String) -> Void)? = nil,
        afterCommit: (@Sendable (String) -> Void)? = nil
    ) {
        self.beforeCommit = beforeCommit
        self.whileCommitting = whileCommitting
        self.afterCommit = afterCommit
    }

    func beforeCommit(jobID: String) { beforeCommit?(jobID) }
    func whileCommitting(jobID: String) { whileCommitting?(jobID) }
    func afterCommit(jobID: String) { afterCommit?(jobID) }
}
