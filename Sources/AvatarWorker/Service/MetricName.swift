/// Prometheus metric names, in one place (the dashboards and alert rules use these).
public enum MetricName {
    public static let jobs = "avatar_jobs_total"                              // labels: outcome, error_code
    public static let stageDuration = "avatar_job_stage_duration_seconds"     // label: stage
    public static let endToEnd = "avatar_job_end_to_end_seconds"
    public static let queueWait = "avatar_job_queue_wait_seconds"
    public static let inFlight = "avatar_jobs_in_flight"
    public static let memoryReserved = "avatar_memory_reserved_bytes"
    public static let memoryBudget = "avatar_memory_budget_bytes"
    public static let fallbacks = "avatar_fallback_renders_total"
    public static let clamps = "avatar_clamps_total"                          // label: kind (zoom, quality, pan)
    public static let uploadAttempts = "avatar_upload_attempts_total"         // label: result (ok, retried, failed)
    public static let dlqRecords = "avatar_dlq_records_total"                 // label: error_code
    public static let commitFailures = "avatar_offset_commit_failures_total"
    public static let publishFailures = "avatar_event_publish_failures_total"
    public static let partitionsAssigned = "avatar_partitions_assigned"
}
