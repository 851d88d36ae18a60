import Dispatch
import Foundation
import Synchronization
import TestEnvironment
import Testing

@testable import AvatarWorker

/// The worker's render slots: how many renders run at once, and who gives a slot back.
@Suite("Render slots")
struct RenderSlotsTests {
    @Test("never more renders at once than slots, and every waiting job gets one in the end")
    func bound() async throws {
        let slots = RenderSlots(width: 2)
        let running = Mutex((now: 0, most: 0))
        let done = DispatchGroup()
        for _ in 0..<12 {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                guard let slot = slots.acquire() else { return }
                running.withLock {
                    $0.now += 1; $0.most = max($0.most, $0.now)
                }
                Thread.sleep(forTimeInterval: 0.01)
                running.withLock { $0.now -= 1 }
                slot.release()
            }
        }
        let finished = await offPool { done.wait(timeout: .now() + 30) }
        #expect(finished == .success)
        #expect(running.withLock { $0.most } == 2)
        #expect(slots.inUse == 0)
    }

    @Test("a slot given back twice counts once")
    func releaseOnce() {
        let slots = RenderSlots(width: 1)
        let slot = slots.acquire()
        slot?.release()
        slot?.release()
        #expect(slots.inUse == 0)
        let again = slots.acquire()
        #expect(again != nil && slots.inUse == 1)
        // Had the second release counted, a second slot would be free now.
        #expect(slots.acquire(poll: .milliseconds(10), abandoned: { true }) == nil)
        again?.release()
    }

    @Test("a job abandoned while it waits leaves without a slot")
    func abandonedWait() {
        let slots = RenderSlots(width: 1)
        let held = slots.acquire()
        let polls = Mutex(0)
        let slot = slots.acquire(poll: .milliseconds(5)) {
            polls.withLock {
                $0 += 1; return $0 >= 3
            }
        }
        #expect(slot == nil)
        #expect(slots.inUse == 1)
        held?.release()
        #expect(slots.inUse == 0)
    }

    /// docs/ARCHITECTURE.md §7: the watchdog cannot stop a thread inside a libjpeg call; handing its slot to
    /// the next job oversubscribed the cores. The slot stays with the thread until it returns.
    @Test("a job timed out at its deadline keeps its slot until its thread returns from the C call")
    func timedOutThreadKeepsItsSlot() throws {
        let slots = RenderSlots(width: 1)
        let deadline = JobDeadline()
        let slot = try #require(slots.acquire())
        #expect(deadline.hold(slot))
        #expect(deadline.timeOut() == .timedOut)
        #expect(deadline.cancellation.isCancelled)
        #expect(slots.inUse == 1, "a written-off render's core was handed to the next job")
        #expect(slots.acquire(poll: .milliseconds(10), abandoned: { true }) == nil)
        slot.release()  // the stuck thread returns
        #expect(slots.inUse == 0)
        let next = try #require(slots.acquire())
        next.release()
    }

    @Test("a slot taken after the job was timed out is given back, and the job may not render")
    func holdAfterTimeout() throws {
        let slots = RenderSlots(width: 1)
        let deadline = JobDeadline()
        #expect(deadline.timeOut() == .timedOut)
        let slot = try #require(slots.acquire())
        #expect(!deadline.hold(slot))
        #expect(slots.inUse == 0)
    }

    @Test("a job inside its commit keeps nothing: its slot was given back when its render ended")
    func committingJob() throws {
        let slots = RenderSlots(width: 1)
        let deadline = JobDeadline()
        let slot = try #require(slots.acquire())
        #expect(deadline.hold(slot))
        slot.release()
        #expect(deadline.enterCommit())
        #expect(deadline.timeOut() == .committing)
        #expect(slots.inUse == 0)
    }
}
