import CropProtocol
import Metrics

/// Records each finished job into swift-metrics (exported to Prometheus by `main`).
/// Labels are low-cardinality enums only: outcome, error code and class, stage, source format, clamp kind.
struct JobMetricsRecorder: Sendable {
    /// `MetricName.stageDuration`'s `stage` of the whole attempt (`JobTrace.total`); the others are `JobStage`'s.
    static let totalStage = "total"
    /// `MetricName.stageDuration`'s `source_format` of a job that never read its source's header.
    static let unknownFormat = "none"

    /// The labels of `MetricName.stageDuration`, always in this order: `stage` (a `JobStage` in the attempt, or
    /// `totalStage`) and `source_format` (the source's container format, `SourceImageFormat`, or `unknownFormat`).
    static func stageDimensions(_ stage: String, format: SourceImageFormat?) -> [(String, String)] {
        [("stage", stage), ("source_format", format?.rawValue ?? unknownFormat)]
    }

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
        // Each stage the job reached, as its record (`sample.latency`, `sample.queueWaitMs`) and its spans say it.
        let trace = report.trace
        for stage in JobStage.allCases where trace.reached(stage) {
            let timer =
                stage.inAttempt
                ? Timer(
                    label: MetricName.stageDuration,
                    dimensions: Self.stageDimensions(stage.rawValue, format: sample.sourceFormat))
                : Timer(label: MetricName.queueWait)
            timer.recordNanoseconds(trace.duration(of: stage).nanoseconds)
        }
        Timer(
            label: MetricName.stageDuration,
            dimensions: Self.stageDimensions(Self.totalStage, format: sample.sourceFormat)
        ).recordNanoseconds(trace.total.nanoseconds)
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
