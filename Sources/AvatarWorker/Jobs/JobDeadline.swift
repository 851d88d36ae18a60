import Imaging
import Synchronization

/// A running job's deadline (`worker.job-timeout-seconds`): its render's cancellation, and who ends the
/// job — the pool thread when it returns, or the pool's watchdog at the deadline — decided once.
///
/// Publication has one point of no return: the transaction that bumps the user's version. A job enters
/// it through `enterCommit()`, which fails once the watchdog has timed the job out, so a job that was
/// reported as `TIMEOUT` never commits afterwards. Once a job is committing, the deadline no longer ends
/// it: the commit and the copies after it are bounded by the database's statement timeout and the
/// storage retries, and the job's own result follows. So a `TIMEOUT` result never hides a published
/// version. Only a job still not back one more whole deadline later is ended by `expire()`, as a
/// `TIMEOUT` whose outcome is unknown (a replay settles it).
///
/// A job timed out while it renders loses its render helper at once (the helper is killed: no C call
/// outlives the deadline), so its thread returns and gives its render slot back (docs/ARCHITECTURE.md §3,
/// "Render helpers").
public final class JobDeadline: Sendable {
    /// Stops the job's render (its render helper is killed) once the job is timed out.
    public let cancellation = RenderCancellation()
    private let state = Mutex(State())

    private struct State {
        var phase = Phase.running
    }

    private enum Phase {
        case running
        case committing
        case ended
    }

    /// What the watchdog found at the deadline.
    enum Verdict: Equatable {
        /// The job is the watchdog's to end: its render is cancelled and it may no longer commit.
        case timedOut
        /// The job is inside its commit: it ends itself when its thread returns.
        case committing
        /// The job's thread already returned and ended it.
        case ended
    }

    public init() {}

    /// The job's thread, just before the transaction that bumps the version: true if the job may commit.
    /// False once the watchdog has timed it out (its `TIMEOUT` is already out).
    public func enterCommit() -> Bool {
        state.withLock { state in
            guard state.phase == .running else { return false }
            state.phase = .committing
            return true
        }
    }

    /// The watchdog, at the deadline.
    func timeOut() -> Verdict {
        let verdict = state.withLock { state -> Verdict in
            switch state.phase {
            case .running:
                state.phase = .ended
                return .timedOut
            case .committing: return .committing
            case .ended: return .ended
            }
        }
        // The render's helper is killed by the job's thread, which watches this flag.
        if verdict == .timedOut { cancellation.cancel() }
        return verdict
    }

    /// The watchdog, a further deadline after it found the job committing: true if the job is still not
    /// back, and is now the watchdog's to end.
    func expire() -> Bool {
        state.withLock { state in
            guard state.phase == .committing else { return false }
            state.phase = .ended
            return true
        }
    }

    /// The job's thread returned: true if it ends the job (the watchdog did not).
    func claimOnReturn() -> Bool {
        state.withLock { state in
            guard state.phase != .ended else { return false }
            state.phase = .ended
            return true
        }
    }
}
