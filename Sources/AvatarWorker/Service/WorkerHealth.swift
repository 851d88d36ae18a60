import Foundation
import Metrics
import Synchronization

/// Live counters of the worker that both /readyz and the Prometheus metrics read.
public final class WorkerHealth: Sendable {
    private struct State {
        var inFlight = 0
        var assigned = 0
        var consumedSinceStart = 0
    }

    private let state = Mutex(State())
    private let inFlightGauge = Gauge(label: MetricName.inFlight)
    private let assignedGauge = Gauge(label: MetricName.partitionsAssigned)
    private let commitFailures = Counter(label: MetricName.commitFailures)
    private let publishFailures = Counter(label: MetricName.publishFailures)

    public init() {}

    public var partitionsAssigned: Int { state.withLock { $0.assigned } }
    public var jobsInFlight: Int { state.withLock { $0.inFlight } }

    func jobsInFlight(delta: Int) {
        let value = state.withLock { state in
            state.inFlight += delta
            return state.inFlight
        }
        inFlightGauge.record(value)
    }

    func assigned(_ count: Int) {
        assignedGauge.record(state.withLock { state in
            state.assigned += count
            return state.assigned
        })
    }

    func revoked(_ count: Int) {
        assignedGauge.record(state.withLock { state in
            state.assigned = max(0, state.assigned - count)
            return state.assigned
        })
    }

    func commitFailed() { commitFailures.increment() }
    func publishFailed() { publishFailures.increment() }
}
