import Dispatch
import ServiceLifecycle

/// The loop of the worker's scheduled housekeeping (`LedgerPruner`, `SourceDeletionSweeper`, `ForgetSweeper`):
/// `body` every `interval`, on a Dispatch thread (its calls block: never on the cooperative pool), until graceful
/// shutdown. A round cut short by the process's exit is the body's to survive.
func runPeriodically(every interval: Duration, _ body: @escaping @Sendable () -> Void) async {
    await cancelWhenGracefulShutdown {
        while !Task.isCancelled {
            // Cancelled (graceful shutdown): the loop simply ends.
            do { try await Task.sleep(for: interval) } catch { return }
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    body()
                    done.resume()
                }
            }
        }
    }
}
