import Foundation

/// Retries an operation on transient storage errors with fixed delays (the upload policy of DESIGN §3:
/// 3 attempts, waiting 0.5 s then 1 s).
///
/// Attempt `n` (1-based) that fails with a transient error waits `delays[n-1]` before attempt `n+1` (the last
/// delay repeats when there are fewer delays than gaps). At most `maxAttempts` attempts are made, so with the
/// defaults the 2 s delay is only used when `maxAttempts` is raised to 4. Permanent errors are thrown at once.
/// The thrown error's `attempts` says how many attempts were made.
///
/// `run` blocks the calling thread while it waits: call it from Dispatch worker threads, like the stores.
public struct RetryPolicy: Sendable {
    public var delays: [Duration]
    public var maxAttempts: Int
    /// Blocks the calling thread for the given duration; tests inject one that records instead of waiting.
    public var sleep: @Sendable (Duration) -> Void

    public init(
        delays: [Duration] = [.milliseconds(500), .seconds(1), .seconds(2)],
        maxAttempts: Int = 3,
        sleep: @escaping @Sendable (Duration) -> Void = RetryPolicy.threadSleep
    ) {
        self.delays = delays
        self.maxAttempts = maxAttempts
        self.sleep = sleep
    }

    /// A policy that makes exactly one attempt.
    public static let none = RetryPolicy(delays: [], maxAttempts: 1)

    /// Sleeps the current thread (not a Swift task): the default `sleep`.
    public static let threadSleep: @Sendable (Duration) -> Void = { duration in
        Thread.sleep(forTimeInterval: duration.timeInterval)
    }

    /// The delay after failed attempt `attempt` (1-based).
    public func delay(afterAttempt attempt: Int) -> Duration {
        guard !delays.isEmpty else { return .zero }
        return delays[min(max(attempt, 1), delays.count) - 1]
    }

    /// Runs `operation` (given the 1-based attempt number) until it succeeds, fails permanently, or
    /// `maxAttempts` attempts have failed. `onRetry(error, attempt, delay)` is called before each wait with the
    /// error of the attempt that just failed.
    public func run<T>(
        _ operation: (Int) throws(StorageError) -> T,
        onRetry: (StorageError, Int, Duration) -> Void = { _, _, _ in }
    ) throws(StorageError) -> (value: T, attempts: Int) {
        let limit = max(1, maxAttempts)
        var attempt = 1
        while true {
            do {
                let value = try operation(attempt)
                return (value, attempt)
            } catch {
                var failure = error
                failure.attempts = attempt
                guard failure.isTransient, attempt < limit else { throw failure }
                let wait = delay(afterAttempt: attempt)
                onRetry(failure, attempt, wait)
                if wait > .zero { sleep(wait) }
                attempt += 1
            }
        }
    }
}

extension Duration {
    /// This duration in seconds, for Foundation APIs.
    var timeInterval: TimeInterval {
        let parts = components
        return TimeInterval(parts.seconds) + TimeInterval(parts.attoseconds) / 1e18
    }
}
