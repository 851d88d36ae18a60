import CropProtocol
import Foundation
import Metrics
import Synchronization

/// Live counters of the worker that both /readyz and the Prometheus metrics read.
public final class WorkerHealth: Sendable {
    private struct State {
        var inFlight = 0
        var assigned = 0
        var revokedTotal = 0
        var draining = false
    }

    private let state = Mutex(State())
    private let inFlightGauge = Gauge(label: MetricName.inFlight)
    private let assignedGauge = Gauge(label: MetricName.partitionsAssigned)
    private let commitFailures = Counter(label: MetricName.commitFailures)
    private let publishFailures = Counter(label: MetricName.publishFailures)
    private let timeouts = Counter(label: MetricName.jobTimeouts)

    public init() {
        inFlightGauge.record(0)
        assignedGauge.record(0)
        timeouts.increment(by: 0)
        Self.registerZeroSeries()
    }

    public var partitionsAssigned: Int { state.withLock { $0.assigned } }
    /// Partitions given up since start (each one drained its jobs): under cooperative rebalancing only the ones
    /// that moved to another worker.
    public var partitionsRevokedTotal: Int { state.withLock { $0.revokedTotal } }
    public var jobsInFlight: Int { state.withLock { $0.inFlight } }
    /// True once the worker stopped fetching to shut down (SIGTERM): it is no longer ready.
    public var isDraining: Bool { state.withLock { $0.draining } }

    /// The worker's jobs in flight changed (`PartitionFlow.jobsInFlight`).
    func jobsInFlight(_ count: Int) {
        state.withLock { $0.inFlight = count }
        inFlightGauge.record(count)
    }

    func assigned(_ count: Int) {
        assignedGauge.record(
            state.withLock { state in
                state.assigned += count
                return state.assigned
            })
    }

    func revoked(_ count: Int) {
        assignedGauge.record(
            state.withLock { state in
                state.assigned = max(0, state.assigned - count)
                state.revokedTotal += count
                return state.assigned
            })
    }

    func jobTimedOut() { timeouts.increment() }

    func draining() { state.withLock { $0.draining = true } }
    func commitFailed() { commitFailures.increment() }
    func publishFailed() { publishFailures.increment() }

    /// Creates the counters and histograms whose label values are known in advance, so they are
    /// exported as 0 from the start: Prometheus sees the first events as an increase (a series that
    /// appears with its first event has no rate until its second), and rates read 0, not "no data".
    private static func registerZeroSeries() {
        for stage in JobStage.allCases.map(\.rawValue) + ["total"] {
            _ = Timer(label: MetricName.stageDuration, dimensions: [("stage", stage)])
        }
        _ = Timer(label: MetricName.endToEnd)
        _ = Timer(label: MetricName.queueWait)
        for outcome in ["applied", "duplicate", "superseded"] {
            let dimensions = JobMetricsRecorder.jobDimensions(outcome: outcome, failure: nil)
            _ = Counter(label: MetricName.jobs, dimensions: dimensions)
        }
        for code in CropErrorCode.allCases {
            let failure = JobFailure(code, detail: "")
            let dimensions = JobMetricsRecorder.jobDimensions(outcome: "failed", failure: failure)
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
        // The deaths a decoder bug causes (SIGSEGV) or an allocation a library cannot survive (SIGABRT).
        for signal in ["SIGSEGV", "SIGABRT"] {
            _ = Counter(label: MetricName.renderHelperDeaths, dimensions: [("signal", signal)])
        }
    }
}
