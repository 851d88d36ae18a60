import Foundation
import Synchronization

/// At most `width` renders at once (`worker.render-slots`, one core each), while the pool holds more jobs
/// than that (`worker.jobs-in-flight`): a job takes a slot for its probe and render, the CPU-bound part,
/// and gives it back before it publishes. Its upload and its database transaction then overlap the next
/// job's render, instead of leaving a core idle while the job waits on I/O (bench/README.md, end to end).
///
/// A slot is given back exactly once, by its job's thread when the render returns; a render past the job's
/// deadline has its helper killed (`JobDeadline`), so it returns at once (docs/ARCHITECTURE.md §3, "Render helpers").
public final class RenderSlots: @unchecked Sendable {
    // @unchecked Sendable: `free` is only touched with `condition` locked.
    public let width: Int
    private let condition = NSCondition()
    private var free: Int

    /// One job's slot; `release()` gives it back, and only the first call counts.
    public final class Slot: Sendable {
        private let slots: RenderSlots
        private let held = Mutex(true)

        fileprivate init(_ slots: RenderSlots) {
            self.slots = slots
        }

        public func release() {
            let wasHeld = held.withLock { held in
                defer { held = false }
                return held
            }
            if wasHeld { slots.giveBack() }
        }
    }

    public init(width: Int) {
        precondition(width > 0, "render slots must be positive")
        self.width = width
        self.free = width
    }

    /// Renders running now.
    public var inUse: Int {
        condition.lock()
        defer { condition.unlock() }
        return width - free
    }

    /// Waits for a slot. Returns nil, without a slot, once `abandoned` holds (the job was timed out while
    /// it waited); the wait looks again at least every `poll`.
    public func acquire(poll: Duration = .milliseconds(100), abandoned: () -> Bool = { false }) -> Slot? {
        condition.lock()
        defer { condition.unlock() }
        while free == 0 {
            if abandoned() { return nil }
            _ = condition.wait(until: Date().addingTimeInterval(poll.seconds))
        }
        if abandoned() { return nil }
        free -= 1
        return Slot(self)
    }

    private func giveBack() {
        condition.lock()
        free += 1
        condition.signal()
        condition.unlock()
    }
}
