import Foundation
import Testing

@testable import AvatarWorker

/// Finding 6 of issue 7: drain and revocation each waited `worker.drain-seconds`, so a SIGTERM
/// whose `close()` revoked partitions could take twice the budget.
@Suite("Shutdown budget")
struct ShutdownBudgetTests {
    @Test("a revocation during shutdown waits only for what is left of the drain deadline")
    func revocationSharesTheShutdownDeadline() {
        let now = Date(timeIntervalSince1970: 1_000)
        let shutdown = now.addingTimeInterval(3)
        #expect(
            PartitionFlow.revocationDeadline(now: now, drain: .seconds(25), shutdown: shutdown) == shutdown)
    }

    @Test("a rebalance outside shutdown gets the whole drain time")
    func rebalanceGetsTheWholeDrain() {
        let now = Date(timeIntervalSince1970: 1_000)
        #expect(
            PartitionFlow.revocationDeadline(now: now, drain: .seconds(25), shutdown: nil)
                == now.addingTimeInterval(25))
    }
}
