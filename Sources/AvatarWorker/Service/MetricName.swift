import Messaging

/// Every Prometheus metric the worker exports, in one place. `dashboards/` (the Grafana
/// dashboard and the alert rules) uses exactly these names; `dashboards/README.md` explains each.
/// Labels are low-cardinality enums only: never ids, keys or paths.
public enum MetricName {
    // MARK: Jobs (JobMetricsRecorder, once per finished job)

    /// Counter. Labels: `outcome` (`CropOutcome`: applied, duplicate, superseded, failed, forgotten), `error_code`
    /// (none or the code), `error_class` (none, permanent, transient).
    public static let jobs = "avatar_jobs_total"
    /// Histogram, seconds, per job: the time of each stage it reached (`JobStage`, as its metrics record and its spans
    /// say). Labels: `stage` (fetch, probe, render, encode, upload, database, or total: the attempt on its pool thread,
    /// the first queue wait excluded) and `source_format` (jpeg, png, webp, heif, avif, gif, tiff, other, or none).
    public static let stageDuration = "avatar_job_stage_duration_seconds"
    /// Histogram, seconds: from the request's `requested_at` to the job's end.
    public static let endToEnd = "avatar_job_end_to_end_seconds"
    /// Histogram, seconds, per job: its `queue_wait` stage (`JobStage.queueWait`: waiting for a pool thread, then for
    /// a render slot).
    public static let queueWait = "avatar_job_queue_wait_seconds"
    /// Counter: jobs rendered from the thumbnail-resolution decode (memory fallback).
    public static let fallbacks = "avatar_fallback_renders_total"
    /// Counter. Label: `kind` (zoom, quality, pan, quality_limited): which clamp of docs/ARCHITECTURE.md §1 engaged.
    public static let clamps = "avatar_clamps_total"
    /// Counter of the publications' storage writes (versioned uploads, public copies, deletes; `StorageWrites`).
    /// Label: `result` (ok: succeeded on the first try, retried: succeeded after a retry, failed: every attempt
    /// failed and the job failed as STORAGE_UNAVAILABLE).
    public static let uploadAttempts = "avatar_upload_attempts_total"
    /// Counter of records written to the DLQ topic. Labels: `error_code`, `error_class`.
    public static let dlqRecords = "avatar_dlq_records_total"
    /// Counter of source photo deletions (`storage.delete-source = after-success`, `SourceDeletionQueue`). Label:
    /// `result` (deleted; failed: the store refused or could not be reached, or the deletion could not be recorded).
    public static let sourceDeletions = "avatar_source_deletions_total"

    // MARK: Forgets (ForgetSweeper, from the fleet's one table of pending forgets)

    /// Gauge: forgets recorded and not completed yet (`PendingForgets`), running or waiting for a retry.
    public static let forgetsPending = "avatar_forgets_pending"
    /// Gauge, seconds: how long the oldest pending forget has been pending (0 when none is).
    public static let forgetPendingOldest = "avatar_forget_pending_oldest_seconds"

    // MARK: Worker state (WorkerMetrics, MemoryBudget)

    /// Gauge: jobs received and not yet finished (queued or running).
    public static let inFlight = "avatar_jobs_in_flight"
    /// Gauge: partitions of the requests topic assigned to this worker.
    public static let partitionsAssigned = "avatar_partitions_assigned"
    /// Gauge: bytes of the memory budget reserved by running jobs.
    public static let memoryReserved = "avatar_memory_reserved_bytes"
    /// Gauge: the memory budget (`worker.memory-budget-mb`) in bytes.
    public static let memoryBudget = "avatar_memory_budget_bytes"
    /// Counter: synchronous offset commits of finished jobs that failed (the worker's view;
    /// `kafkaCommitFailures` counts every mode).
    public static let commitFailures = "avatar_offset_commit_failures_total"
    /// Counter: jobs whose events the broker did not confirm (the job is redelivered).
    public static let publishFailures = "avatar_event_publish_failures_total"
    /// Counter: jobs ended as TIMEOUT by the pool's deadline.
    public static let jobTimeouts = "avatar_job_timeouts_total"
    /// Counter: render helpers that died during a job (each one failed job, `DECODE_FAILED`; helpers killed at a
    /// job's deadline are in `jobTimeouts`). Label: `signal` (SIGSEGV, SIGABRT, …, or `exit` for one that exited).
    public static let renderHelperDeaths = "avatar_render_helper_deaths_total"
    /// `renderHelperDeaths`' `signal` for a helper killed because the worker refused its reply (`RefusedReply`).
    public static let refusedReply = "refused-reply"

    /// Histogram, seconds: a job's encodes of one output format (every size of it, docs/FORMATS.md). Label:
    /// `format` (png, jpeg, webp, avif).
    public static let encodeDuration = "avatar_encode_duration_seconds"
    /// Gauge: 1 when the face model loaded at start, 0 when it is missing or not the pinned file (every request
    /// without a pose then gets the centred square; `/readyz`'s `face-model` detail says why).
    public static let faceModelLoaded = "avatar_face_model_loaded"

    // MARK: Build (BuildInfo)

    /// Gauge of 1. Labels: `version` (the project's), `libvips`, `librdkafka`, `libjpeg_turbo`, `libpq` (the
    /// loaded libraries' versions).
    public static let buildInfo = "avatar_build_info"

    // MARK: Traces (TraceExportDiagnostics)

    /// Counter: spans the OTLP exporter lost. Label: `reason` (`queue_full`, `export_failed`).
    public static let traceSpansDropped = "avatar_trace_spans_dropped_total"

    // MARK: Kafka client (recorded by the Messaging module)

    /// Gauge from librdkafka statistics (`statistics.interval.ms`). Labels: `topic`, `partition`.
    public static let consumerLag = KafkaMetricNames.consumerLag
    /// Counter. Labels: `mode` (sync, async, rebalance), `error`.
    public static let kafkaCommitFailures = KafkaMetricNames.commitFailures
    /// Counter. Labels: `topic`, `error`.
    public static let kafkaDeliveryFailures = KafkaMetricNames.deliveryFailures
    /// Counter. Label: `error`.
    public static let kafkaClientErrors = KafkaMetricNames.clientErrors
    /// Counter. Label: `kind` (assign, revoke, lost, error).
    public static let kafkaRebalances = KafkaMetricNames.rebalances

    /// Every name above (the telemetry test checks each one is exported).
    public static let all: [String] = [
        jobs, stageDuration, endToEnd, queueWait, fallbacks, clamps, uploadAttempts, dlqRecords, sourceDeletions,
        forgetsPending, forgetPendingOldest,
        inFlight, partitionsAssigned, memoryReserved, memoryBudget, commitFailures, publishFailures,
        jobTimeouts, renderHelperDeaths, encodeDuration, faceModelLoaded, buildInfo, traceSpansDropped,
        consumerLag, kafkaCommitFailures, kafkaDeliveryFailures, kafkaClientErrors, kafkaRebalances,
    ]

    /// Buckets of every latency histogram, 5 ms to 5 min (end-to-end includes time spent queued in Kafka).
    public static let durationBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        .seconds(30), .seconds(60), .seconds(120), .seconds(300),
    ]
}
