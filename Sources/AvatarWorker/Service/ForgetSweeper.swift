import Foundation
import Logging
import ServiceLifecycle

/// Runs the forgets that did not complete (`PendingForgets`: a lock timeout, an outage longer than their retries, a
/// worker that died mid-forget) again until they do, and the last looks of those that did (which write the results
/// topic's null record for the user again, `ResultsErasure`), every `interval`; shows the backlog on the gauges
/// `avatar_forgets_pending` and `avatar_forget_pending_oldest_seconds` (alert `AvatarForgetsPending`). Every worker
/// sweeps; a claim pushes the forget's due time out, so two workers never run one at once. Stops at graceful
/// shutdown; a forget cut short by the process's exit stays pending.
public struct ForgetSweeper: Service {
    let forgetting: UserForgetting
    let interval: Duration
    let logger: Logger

    /// How often a worker looks for due forgets by default.
    public static let defaultInterval = Duration.seconds(15)

    public init(forgetting: UserForgetting, interval: Duration = defaultInterval, logger: Logger) {
        self.forgetting = forgetting
        self.interval = interval
        self.logger = logger
    }

    /// One round: runs every due forget and last look, then shows the backlog. Returns how many were done.
    @discardableResult
    func sweep() throws -> Int {
        var completed = 0
        for pending in try forgetting.pending.claim() {
            do {
                if pending.lastLook {
                    let deleted = try forgetting.lastLook(userID: pending.userID, requestedAt: pending.requestedAt)
                    if deleted > 0 {
                        logger.warning(
                            "a forget's last look deleted late writes", metadata: [LogKey.objectsDeleted: "\(deleted)"])
                    }
                } else {
                    let erased = try forgetting.run(userID: pending.userID, requestedAt: pending.requestedAt)
                    logger.info(
                        "pending forget completed",
                        metadata: [
                            LogKey.ledgerRows: "\(erased.ledgerRows)", LogKey.objectsDeleted: "\(erased.objects)",
                        ])
                    if let reason = erased.resultsNotErased {
                        logger.warning(
                            "a completed forget's results stay until its last look",
                            metadata: [LogKey.error: "\(reason)"])
                    }
                }
                completed += 1
            } catch {
                logger.warning(
                    "pending forget failed; it is tried again later", metadata: [LogKey.error: "\(error)"])
            }
        }
        PendingForgets.show(try forgetting.pending.backlog())
        return completed
    }

    public func run() async throws {
        let sweeper = self
        await runPeriodically(every: interval) {
            do {
                try sweeper.sweep()
            } catch {
                sweeper.logger.warning("forget sweep failed", metadata: [LogKey.error: "\(error)"])
            }
        }
    }
}
