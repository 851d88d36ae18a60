/// The one vocabulary of a job's time (docs/ARCHITECTURE.md §3, "Where a job's time goes"). Each stage is defined
/// once, here, as spans of the job's clock (`ContinuousClock`: where each starts and ends, in which process); the job
/// records them as `JobStep`s (`JobTrace.record`), and the metrics topic (`crop_metrics.proto`: `queue_wait_ms` and
/// `StageLatency`), the Prometheus histograms (`JobMetricsRecorder`) and the job's trace (`JobTracing`: one span per
/// step, named by the stage's raw value) all read those steps, so each word means the same measured time in all three.
///
/// The steps of one job never overlap. Every stage but the first wait lies within the attempt (`JobTrace.total`), so
/// the attempt's stages (`inAttempt`) add up to at most its total.
public enum JobStage: String, Sendable, CaseIterable {
    /// Worker, waiting for capacity: from the consumer handing the message over to a pool thread taking the job up
    /// (before the attempt), then, within it, from asking for a render slot to holding one.
    case queueWait = "queue_wait"
    /// Worker: reading the source from object storage, retries included, up to its bytes in memory.
    case fetch
    /// Worker's call into the render helper that reads the header: handing the source over, the helper's header read
    /// and limit checks (`RenderTimings.probe`), its reply.
    case probe
    /// Worker's call into the render helper that renders, less the helper's `encode`: handing the render over, the
    /// helper's face frame, detection, plan, decode, crop, colour and resize (`RenderTimings.render`), its reply.
    case render
    /// Render helper: encoding every rendition and the BlurHash (`RenderTimings.encode`), as the helper timed it; its
    /// span is laid at the end of the worker's render call (the reply's hand-over is in `render`).
    case encode
    /// Worker: the publication's object-storage phases: the versioned uploads, after the commit the public copies and
    /// the deletes of what the new version replaces (for a lost job, the repair's copies and deletes); each write
    /// with its fence query and its retries.
    case upload
    /// Worker: the rest of the publication: a connection, the user's lock, the ledger check, the transaction, and the
    /// retries of a publication the database interrupted.
    case database

    /// Whether the stage lies within the attempt (`crop_metrics.proto`'s `StageLatency`: they add up to at most
    /// `total_ms`); `queueWait` starts before it and is `queue_wait_ms`.
    public var inAttempt: Bool { self != .queueWait }
}

/// One span of a stage, on the job's clock: what the job's timing is made of. Steps are recorded whether or not
/// tracing is on; they cost two clock reads.
public struct JobStep: Sendable {
    public var stage: JobStage
    public var start: ContinuousClock.Instant
    public var end: ContinuousClock.Instant

    public init(_ stage: JobStage, from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) {
        self.stage = stage
        self.start = start
        self.end = end
    }

    public var duration: Duration { end - start }
}
