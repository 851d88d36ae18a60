import Foundation

/// A dedicated OS thread (never a Swift concurrency executor) for blocking librdkafka polls, which
/// can be joined.
///
/// `@unchecked Sendable`: `done` is only read and written while holding `condition`; `thread` is
/// immutable after init.
final class JoinableThread: @unchecked Sendable {
    private let condition = NSCondition()
    private var done = false
    private var thread: Thread?

    init(name: String, body: @escaping @Sendable () -> Void) {
        let thread = Thread { [condition] in
            body()
            condition.lock()
            self.markDone()
            condition.unlock()
        }
        thread.name = name
        self.thread = thread
        thread.start()
    }

    private func markDone() {
        done = true
        condition.broadcast()
    }

    /// Whether the caller runs on this thread (joining it from itself would deadlock).
    var isCurrent: Bool {
        Thread.current === thread
    }

    /// Waits until the body has returned. Idempotent.
    func join() {
        condition.lock()
        while !done {
            condition.wait()
        }
        condition.unlock()
    }
}
