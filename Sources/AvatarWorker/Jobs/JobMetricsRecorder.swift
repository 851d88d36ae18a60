import CropProtocol
import Metrics

/// Records each finished job into swift-metrics (exported to Prometheus by `main`).
/// Labels are low-cardinality enums only: outcome, error code and class, stage, clamp kind.
struct JobMetricsRecorder: Sendable {
    enum ClampKind: String, CaseIterable {
        case zoom, quality, pan
        /// The source is too small for the quality bound (`s_max < s_min`): any zoom is clamped.
        case qualityLimited = "quality_limited"
    }

    enum UploadResult: String, CaseIterable {
        case ok, retried, failed
    }

    /// The labels of `MetricName.jobs`, always in this order (Prometheus families compare them in order).
    static func jobDimensions(outcome: String, failure: JobFailure?) -> [(String, String)] {
        [
            ("outcome", outcome), ("error_code", failure?.code.rawValue ?? "none"),
            ("error_class", failure?.errorClass.rawValue ?? "none"),
        ]
    }

    func record(_ report: JobReport, sample: CropMetricsSample) {
        let outcome = Self.jobDimensions(outcome: sample.outcome.rawValue, failure: report.failure)
        Counter(label: MetricName.jobs, dimensions: outcome).increment()
        for (stage, duration) in report.trace.latencies {
            Timer(label: MetricName.stageDuration, dimensions: [("stage", stage.rawValue)])
                .recordNanoseconds(duration.nanoseconds)
        }
        Timer(label: MetricName.stageDuration, dimensions: [("stage", "total")])
            .recordNanoseconds(report.trace.total.nanoseconds)
        Timer(label: MetricName.queueWait).recordNanoseconds(report.trace.queueWait.nanoseconds)
        for encode in sample.formatEncodes {
            Timer(label: MetricName.encodeDuration, dimensions: [("format", encode.format.rawValue)])
                .recordNanoseconds(Int64(encode.encodeMs * 1_000_000))
        }
        if sample.endToEndMs > 0 {
            Timer(label: MetricName.endToEnd).recordNanoseconds(Int64(sample.endToEndMs * 1_000_000))
        }
        if sample.fallbackUsed { Counter(label: MetricName.fallbacks).increment() }
        if sample.zoomClamped { clamp(.zoom) }
        if sample.qualityClamped { clamp(.quality) }
        if sample.qualityLimited { clamp(.qualityLimited) }
        if sample.panClamped { clamp(.pan) }
        for (result, writes) in Self.storageWrites(report) where writes > 0 {
            Counter(label: MetricName.uploadAttempts, dimensions: [("result", result.rawValue)]).increment(by: writes)
        }
    }

    /// What `MetricName.uploadAttempts` adds for `report`: one per storage write, by how it ended; a job whose
    /// storage failed ends with one failed write.
    static func storageWrites(_ report: JobReport) -> [(UploadResult, Int)] {
        let writes = report.trace.storageWrites
        return [
            (.ok, writes.count - writes.retried), (.retried, writes.retried),
            (.failed, report.failure?.code == .storageUnavailable ? 1 : 0),
        ]
    }

    /// The labels of `MetricName.dlqRecords`, always in this order.
    static func dlqDimensions(_ failure: JobFailure) -> [(String, String)] {
        [("error_code", failure.code.rawValue), ("error_class", failure.errorClass.rawValue)]
    }

    /// A failed job's record reached the DLQ topic.
    func recordDLQ(_ failure: JobFailure) {
        Counter(label: MetricName.dlqRecords, dimensions: Self.dlqDimensions(failure)).increment()
    }

    private func clamp(_ kind: ClampKind) {
        Counter(label: MetricName.clamps, dimensions: [("kind", kind.rawValue)]).increment()
    }
}
