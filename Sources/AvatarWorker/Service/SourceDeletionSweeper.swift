import Foundation
import Logging
import ServiceLifecycle

/// Deletes the source photos whose time has come (`SourceDeletionQueue`, `storage.delete-source = after-success`),
/// every half of `storage.delete-source-delay-seconds`, between 1 and 60 seconds. Every worker sweeps; the queue's
/// row locks keep two from deleting one key. Stops at graceful shutdown; a sweep cut short by the process's exit
/// loses nothing (a key's row goes only once its source is gone).
public struct SourceDeletionSweeper: Service {
    let queue: SourceDeletionQueue
    let interval: Duration
    let logger: Logger

    public init(queue: SourceDeletionQueue, logger: Logger) {
        self.queue = queue
        self.interval = Self.interval(delay: queue.delay)
        self.logger = logger
    }

    /// Half the delay, within 1 to 60 seconds: a source goes at most that long after it is due.
    static func interval(delay: Duration) -> Duration {
        min(max(delay / 2, .seconds(1)), .seconds(60))
    }

    public func run() async throws {
        let queue = queue
        let logger = logger
        let retry = interval
        await runPeriodically(every: interval) {
            do {
                let swept = try queue.sweep(retry: retry, logger: logger)
                if swept.deleted > 0 {
                    logger.info("source photos deleted", metadata: [LogKey.sources: "\(swept.deleted)"])
                }
            } catch {
                logger.warning("source deletion sweep failed", metadata: [LogKey.error: "\(error)"])
            }
        }
    }
}
