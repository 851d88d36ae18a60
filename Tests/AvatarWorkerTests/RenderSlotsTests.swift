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
}
