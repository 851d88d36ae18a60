import CropProtocol
import Metrics

/// Records each finished job into swift-metrics (exported to Prometheus by `main`).
/// Labels are low-cardinality enums only: outcome, error code, stage, clamp kind.
struct JobMetricsRecorder: Sendable {
    func record(_ report: JobReport, sample: CropMetricsSample) {
        let errorCode = report.failure?.code.rawValue ?? "none"
        Counter(label: MetricName.jobs, dimensions: [("outcome", sample.outcome.rawValue), ("error_code", errorCode)])
            .increment()
        for (stage, duration) in report.latencies {
            Timer(label: MetricName.stageDuration, dimensions: [("stage", stage.rawValue)]).recordNanoseconds(duration.nanoseconds)
        }
        Timer(label: MetricName.stageDuration, dimensions: [("stage", "total")]).recordNanoseconds(report.total.nanoseconds)
        Timer(label: MetricName.queueWait).recordNanoseconds(report.queueWait.nanoseconds)
        if sample.endToEndMs > 0 {
            Timer(label: MetricName.endToEnd).recordNanoseconds(Int64(sample.endToEndMs * 1_000_000))
        }
        if sample.fallbackUsed { Counter(label: MetricName.fallbacks).increment() }
        if sample.zoomClamped { Counter(label: MetricName.clamps, dimensions: [("kind", "zoom")]).increment() }
        if sample.qualityLimited { Counter(label: MetricName.clamps, dimensions: [("kind", "quality")]).increment() }
        if sample.panClamped { Counter(label: MetricName.clamps, dimensions: [("kind", "pan")]).increment() }
        if report.uploadAttempts > 0 || report.failure?.code == .storageUnavailable {
            let failed = report.failure?.code == .storageUnavailable
            let attempts = failed ? report.failure!.attempts : report.uploadAttempts
            let result = failed ? "failed" : (attempts > 1 ? "retried" : "ok")
            Counter(label: MetricName.uploadAttempts, dimensions: [("result", result)]).increment(by: max(attempts, 1))
        }
        if report.failure != nil {
            Counter(label: MetricName.dlqRecords, dimensions: [("error_code", errorCode)]).increment()
        }
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
