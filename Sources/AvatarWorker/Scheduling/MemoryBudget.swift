import Foundation
import Imaging
import Metrics

/// The worker's memory budget (docs/ARCHITECTURE.md §2, "Memory"). Each job reserves an
/// estimate computed from its header before decoding; a reservation that does not
/// fit at full resolution is taken at thumbnail resolution instead, and one that
/// fits nowhere waits for running jobs to release theirs.
public final class MemoryBudget: @unchecked Sendable {
    // @unchecked Sendable: `reserved` and `peak` are only touched with `condition` locked.
    public enum Mode: String, Sendable { case fullResolution = "full", fallback }

    /// What a job holds until it calls `release`.
    public struct Reservation: Sendable {
        public let mode: Mode
        public let bytes: Int
    }

    public let limit: Int
    private let condition = NSCondition()
    private var reserved = 0
    /// `MetricName.memoryReserved`, recorded whenever `reserved` changes (with `condition` locked).
    private let reservedGauge = Gauge(label: MetricName.memoryReserved)

    public init(limit: Int) {
        precondition(limit > 0, "memory budget must be positive")
        self.limit = limit
        Gauge(label: MetricName.memoryBudget).record(limit)
        reservedGauge.record(0)
    }

    /// Bytes reserved right now.
    public var inUse: Int {
        condition.lock()
        defer { condition.unlock() }
        return reserved
    }

    /// Reserves memory for a job, blocking while it fits nowhere (`MemoryAdmission.decide`:
    /// full resolution, else the thumbnail-resolution fallback, else wait). `forceFallback`
    /// skips the full-resolution option. Returns nil if `deadline` passes first.
    public func reserve(_ estimate: MemoryEstimate, forceFallback: Bool = false, deadline: Date = .distantFuture)
        -> Reservation?
    {
        var estimate = estimate
        if forceFallback { estimate.fullResolution = Int.max / 2 }
        condition.lock()
        defer { condition.unlock() }
        while true {
            switch MemoryAdmission.decide(estimate: estimate, budget: limit, reserved: reserved) {
            case .fullResolution(let bytes):
                reserved += bytes
                reservedGauge.record(reserved)
                return Reservation(mode: .fullResolution, bytes: bytes)
            case .fallback(let bytes):
                reserved += bytes
                reservedGauge.record(reserved)
                return Reservation(mode: .fallback, bytes: bytes)
            case .wait:
                // Foundation on Linux traps converting `.distantFuture` to a timespec.
                if deadline == .distantFuture {
                    condition.wait()
                } else if !condition.wait(until: deadline) {
                    return nil
                }
            }
        }
    }

    /// Returns a reservation's memory to the budget and wakes waiting jobs.
    public func release(_ reservation: Reservation) {
        condition.lock()
        reserved -= reservation.bytes
        reservedGauge.record(reserved)
        condition.broadcast()
        condition.unlock()
    }
}
