import Foundation
import Storage

/// How a job retries a step whose failures may be transient: at most `maxAttempts` attempts with
/// fixed delays between them (docs/ARCHITECTURE.md §3). A job holds one per kind of step, named for what it
/// retries (`CropJobProcessor.Dependencies`): `fetchRetry` reads the source photo, `uploadRetry` writes the
/// renders, `databaseRetry` runs each database step. The worker's event publishing uses one too
/// (`PartitionFlow.publishRetry`), for its attempts and delays only: it waits without blocking a thread.
///
/// Attempt `n` (1-based) that fails with a transient error waits `delays[n-1]` before attempt `n+1` (the last
/// delay repeats when there are fewer delays than gaps). The default is 3 attempts, waiting 0.5 s then 1 s.
/// A failure that is not transient is thrown at once.
///
/// `run` blocks the calling thread while it waits: call it from the job's pool thread, like the stores and
/// the database client.
public struct RetryPolicy: Sendable {
    public var delays: [Duration]
    public var maxAttempts: Int
    /// Blocks the calling thread for the given duration; tests inject one that records instead of waiting.
    public var sleep: @Sendable (Duration) -> Void

    public init(
        delays: [Duration] = [.milliseconds(500), .seconds(1)],
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
        Thread.sleep(forTimeInterval: duration.seconds)
    }

    /// The delay after failed attempt `attempt` (1-based).
    public func delay(afterAttempt attempt: Int) -> Duration {
        guard !delays.isEmpty else { return .zero }
        return delays[min(max(attempt, 1), delays.count) - 1]
    }

    /// Runs `operation` (given the 1-based attempt number) until it succeeds, throws an error `isTransient`
    /// refuses, or `maxAttempts` attempts have failed; the last attempt's error is thrown unchanged.
    /// `onRetry(error, attempt, delay)` is called before each wait with the error of the attempt that just
    /// failed. Returns the value and the number of attempts made.
    public func run<T, Failure: Error>(
        _ operation: (_ attempt: Int) throws(Failure) -> T,
        isTransient: (Failure) -> Bool,
        onRetry: (Failure, _ attempt: Int, _ delay: Duration) -> Void = { _, _, _ in }
    ) throws(Failure) -> (value: T, attempts: Int) {
        let limit = max(1, maxAttempts)
        var attempt = 1
        while true {
            do {
                return (try operation(attempt), attempt)
            } catch {
                guard isTransient(error), attempt < limit else { throw error }
                let wait = delay(afterAttempt: attempt)
                onRetry(error, attempt, wait)
                if wait > .zero { sleep(wait) }
                attempt += 1
            }
        }
    }

    /// An object-store call: transient `StorageError`s are retried, and the error thrown carries the number
    /// of attempts made (`StorageError.attempts`).
    public func run<T>(
        _ operation: (_ attempt: Int) throws(StorageError) -> T,
        onRetry: (StorageError, _ attempt: Int, _ delay: Duration) -> Void = { _, _, _ in }
    ) throws(StorageError) -> (value: T, attempts: Int) {
        var made = 0
        do {
            return try run(
                { attempt throws(StorageError) in
                    made = attempt
                    return try operation(attempt)
                }, isTransient: \.isTransient, onRetry: onRetry)
        } catch {
            var failure = error
            failure.attempts = made
            throw failure
        }
    }
}
