import CropGeometry
import CropProtocol
import Foundation
import Metrics

/// The worker's own counters and gauges for Prometheus (`MetricName`). It keeps no state: the counts the gauges
/// show are the flow's (`PartitionFlow`), recorded as they change; `/readyz` reads the flow itself.
final class WorkerMetrics: Sendable {
    private let inFlightGauge = Gauge(label: MetricName.inFlight)
    private let assignedGauge = Gauge(label: MetricName.partitionsAssigned)
    private let commitFailures = Counter(label: MetricName.commitFailures)
    private let publishFailures = Counter(label: MetricName.publishFailures)
    private let timeouts = Counter(label: MetricName.jobTimeouts)

    init() {
        inFlightGauge.record(0)
        assignedGauge.record(0)
        timeouts.increment(by: 0)
        Self.registerZeroSeries()
    }

    /// The flow's counts after a change (`AvatarWorkerService.changeFlow`).
    func show(_ flow: PartitionFlow) {
        inFlightGauge.record(flow.jobsInFlight)
        assignedGauge.record(flow.partitionsAssigned)
    }

    func jobTimedOut() { timeouts.increment() }
    func commitFailed() { commitFailures.increment() }
    func publishFailed() { publishFailures.increment() }

    /// Creates the counters and histograms whose label values are known in advance, so they are
    /// exported as 0 from the start: Prometheus sees the first events as an increase (a series that
    /// appears with its first event has no rate until its second), and rates read 0, not "no data".
    private static func registerZeroSeries() {
        for format in SourceImageFormat.allCases.map(Optional.some) + [nil] {
            for stage in JobStage.allCases.filter(\.inAttempt).map(\.rawValue) + [JobMetricsRecorder.totalStage] {
                _ = Timer(
                    label: MetricName.stageDuration,
                    dimensions: JobMetricsRecorder.stageDimensions(stage, format: format))
            }
        }
        for format in AvatarFormat.allCases {
            _ = Timer(label: MetricName.encodeDuration, dimensions: [("format", format.rawValue)])
        }
        _ = Timer(label: MetricName.endToEnd)
        _ = Timer(label: MetricName.queueWait)
        for outcome in CropOutcome.allCases where outcome != .failed {
            let dimensions = JobMetricsRecorder.jobDimensions(outcome: outcome.rawValue, failure: nil)
            _ = Counter(label: MetricName.jobs, dimensions: dimensions)
        }
        for code in CropErrorCode.allCases {
            let failure = JobFailure(code, detail: "")
            let dimensions = JobMetricsRecorder.jobDimensions(outcome: CropOutcome.failed.rawValue, failure: failure)
            _ = Counter(label: MetricName.jobs, dimensions: dimensions)
            _ = Counter(label: MetricName.dlqRecords, dimensions: JobMetricsRecorder.dlqDimensions(failure))
        }
        _ = Counter(label: MetricName.fallbacks)
        for kind in JobMetricsRecorder.ClampKind.allCases {
            _ = Counter(label: MetricName.clamps, dimensions: [("kind", kind.rawValue)])
        }
        for result in JobMetricsRecorder.UploadResult.allCases {
            _ = Counter(label: MetricName.uploadAttempts, dimensions: [("result", result.rawValue)])
        }
        for result in SourceDeletionQueue.Result.allCases {
            _ = Counter(label: MetricName.sourceDeletions, dimensions: [("result", result.rawValue)])
        }
        PendingForgets.show(PendingForgets.Backlog(count: 0, oldest: .zero))
        // The deaths a decoder bug causes (SIGSEGV), an allocation a library cannot survive (SIGABRT), a call outside
        // the lockdown's allow-list (SIGSYS), and a reply the worker refused.
        for signal in ["SIGSEGV", "SIGABRT", "SIGSYS", MetricName.refusedReply] {
            _ = Counter(label: MetricName.renderHelperDeaths, dimensions: [("signal", signal)])
        }
    }
}
