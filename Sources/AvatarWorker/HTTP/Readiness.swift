import Dispatch
import Synchronization

/// Runs the readiness checks for `/readyz` without blocking the caller's thread: each check runs on
/// a Dispatch queue and counts as failed when it has not answered within `timeout`. A report is
/// reused for `cacheFor`, and callers arriving while one is being computed wait for that one, so
/// frequent probes cost at most one round of checks per interval.
public final class Readiness: Sendable {
    private struct State {
        var cached: (at: ContinuousClock.Instant, report: ReadinessReport)?
        var waiters: [CheckedContinuation<ReadinessReport, Never>]?
        /// Checks that timed out and are still running: not started again until they return.
        var running: Set<String> = []
    }

    public let checks: [ReadinessCheck]
    public let timeout: Duration
    public let cacheFor: Duration
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "avatar.readiness", attributes: .concurrent)

    public init(checks: [ReadinessCheck], timeout: Duration = .seconds(2), cacheFor: Duration = .milliseconds(1500)) {
        self.checks = checks
        self.timeout = timeout
        self.cacheFor = cacheFor
    }

    /// The latest report, computing a new one when the cached one is older than `cacheFor`.
    public func report() async -> ReadinessReport {
        await withCheckedContinuation { (continuation: CheckedContinuation<ReadinessReport, Never>) in
            enum Action { case answer(ReadinessReport), wait, evaluate }
            let now = ContinuousClock.now
            let action = state.withLock { state -> Action in
                if let cached = state.cached, now - cached.at < cacheFor { return .answer(cached.report) }
                if state.waiters != nil {
                    state.waiters!.append(continuation)
                    return .wait
                }
                state.waiters = [continuation]
                return .evaluate
            }
            switch action {
            case .answer(let report): continuation.resume(returning: report)
            case .wait: break
            case .evaluate: evaluate()
            }
        }
    }

    /// Starts every check; `finish` runs once, when all have answered or the timeout passes.
    private func evaluate() {
        let round = Round()
        let group = DispatchGroup()
        for check in checks {
            let alreadyRunning = state.withLock { state in !state.running.insert(check.name).inserted }
            if alreadyRunning {
                round.results.withLock { $0[check.name] = .failed("previous check still running") }
                continue
            }
            group.enter()
            queue.async { [self] in
                let status = check.run()
                round.results.withLock { $0[check.name] = status }
                _ = state.withLock { $0.running.remove(check.name) }
                group.leave()
            }
        }
        let finish: @Sendable () -> Void = { [self] in
            guard
                round.finished.withLock({ done in
                    defer { done = true }; return !done
                })
            else { return }
            let answered = round.results.withLock { $0 }
            let report = ReadinessReport(
                checks: checks.map { check in
                    let status = answered[check.name] ?? .failed("timed out after \(timeout)")
                    return .init(name: check.name, ok: status.ok, detail: status.detail)
                })
            let waiters = state.withLock { state in
                state.cached = (ContinuousClock.now, report)
                defer { state.waiters = nil }
                return state.waiters ?? []
            }
            for waiter in waiters { waiter.resume(returning: report) }
        }
        group.notify(queue: queue, execute: finish)
        let (seconds, attoseconds) = timeout.components
        let milliseconds = Int(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        queue.asyncAfter(deadline: .now() + .milliseconds(milliseconds), execute: finish)
    }

    /// The answers of one round of checks.
    private final class Round: Sendable {
        let results = Mutex<[String: ReadinessCheck.Status]>([:])
        let finished = Mutex(false)
    }
}
