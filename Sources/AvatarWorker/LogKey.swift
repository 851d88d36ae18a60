/// Logging metadata keys of the worker, in one place and one style (lower snake case), as `MetricName` is
/// for metrics. Logs carry job ids, never user ids, storage keys, paths or image bytes. (The `Messaging`,
/// `Database` and `Storage` modules prefix theirs: `kafka.`, `db.`, `storage.`.)
public enum LogKey {
    // A job.
    public static let jobID = "job_id"
    /// The job's trace (W3C trace id, hex): on every line of a job, when its request carried a `traceparent` or
    /// tracing is on (the job's own span's trace).
    public static let traceID = "trace_id"
    /// The span a job's events continue (the job's span when tracing is on), on the job's result line.
    public static let spanID = "span_id"
    public static let avatarVersion = "avatar_version"
    public static let outcome = "outcome"
    public static let errorCode = "error_code"
    public static let errorClass = "class"
    public static let error = "error"
    public static let attempt = "attempt"
    public static let attempts = "attempts"
    /// A retry's wait, as a `Duration`.
    public static let delay = "delay"
    /// A retry's wait, in seconds.
    public static let delaySeconds = "delay_s"
    /// How long a job waited for a pool thread, in milliseconds.
    public static let queueWaitMilliseconds = "queue_wait_ms"

    // The flow.
    public static let partition = "partition"
    public static let partitions = "partitions"
    public static let offset = "offset"
    public static let renderSlots = "render_slots"
    public static let jobsInFlight = "jobs_in_flight"
    public static let queued = "queued"
    public static let running = "running"
    public static let abandoned = "abandoned"
    public static let drained = "drained"

    // Replay.
    public static let reason = "reason"
    public static let replayCount = "replay_count"
    public static let records = "records"
    public static let received = "received"
    public static let idleTimeout = "idle_timeout"

    // Readiness and configuration.
    public static let check = "check"
    public static let deprecatedKey = "deprecated_key"
    /// `tracing.sample-ratio` in effect.
    public static let sampleRatio = "sample_ratio"

    // Data lifecycle (prune, forget).
    /// Ledger rows a forget or a prune deleted.
    public static let ledgerRows = "ledger_rows"
    /// Avatar objects a forget deleted.
    public static let objectsDeleted = "objects_deleted"
    /// Source photos a sweep deleted (a count, never a key).
    public static let sources = "sources_deleted"
}
