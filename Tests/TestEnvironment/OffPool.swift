import Foundation

/// Runs blocking work on a thread of its own and waits for it without holding a Swift concurrency thread.
///
/// Swift Testing runs every test, synchronous or not, on the cooperative pool: one thread per core. Work
/// that blocks one of them in a C call (libpq, librdkafka's synchronous calls, a child process) holds up
/// every other test's awaits, an in-process worker's among them. On a 2-core machine, with dozens of
/// harnesses migrating their schemas at once, that was over half a minute in which no await anywhere
/// resumed, and the other tests' deadlines measured that queue instead of what they wait for.
///
/// A thread of its own rather than `DispatchQueue.global()`, whose few threads would queue one test's
/// blocking wait behind another's. `work` that throws nothing needs no `try`.
public func offPool<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, E>, Never>) in
        Thread { continuation.resume(returning: Result { () throws(E) -> T in try work() }) }.start()
    }
    return try result.get()
}
