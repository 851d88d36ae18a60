import Foundation
import Logging
import ServiceLifecycle

/// Prunes the ledger every `ledger.prune-interval-minutes` (`LedgerRetention`; one worker of the fleet at a time,
/// by the prune's advisory lock). Stops at graceful shutdown; a prune cut short by the process's exit loses nothing
/// (each batch is its own statement).
public struct LedgerPruner: Service {
    let retention: LedgerRetention
    let interval: Duration
    let logger: Logger

    public init(retention: LedgerRetention, interval: Duration, logger: Logger) {
        self.retention = retention
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        let retention = retention
        let logger = logger
        await runPeriodically(every: interval) {
            do {
                if let pruned = try retention.prune() {
                    logger.info("ledger pruned", metadata: [LogKey.ledgerRows: "\(pruned)"])
                }
            } catch {
                logger.warning("ledger prune failed", metadata: [LogKey.error: "\(error)"])
            }
        }
    }
}
