import Foundation

/// Runs blocking work on a thread of its own and waits for it without holding a Swift concurrency thread.
///
/// Swift Testing runs every test, synchronous or not, on the cooperative pool: one thread per core. Work
/// that blocks one of them in a C call (libpq, librdkafka's synchronous calls, a child process) holds up
/// every other test's awaits, an in-process worker's among them. On a 2-core machine, with dozens of
/// harnesses migrating their schemas at once, that was over half a minute in which no await anywhere
/// resumed, and the other tests' deadlines measured that queue instead of what they wait for.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
