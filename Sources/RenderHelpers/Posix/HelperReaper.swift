import Foundation
import Glibc

/// Waits, on a thread of its own, for the helpers the pool killed: a helper's end (the kernel tearing down its address
/// space, about 3 ms on the bench's VM: CHANGELOG.md, 2026-11-29) is not on its job's path, which goes on as soon
/// as the helper is sent SIGKILL. A killed helper runs no more of its own code; until it is reaped it is a zombie
/// holding its pid, so no other process can take that pid meanwhile.
final class HelperReaper: @unchecked Sendable {
    // @unchecked Sendable: `queue`, `reaping` and `running` are only touched with `condition` locked; a queued
    // helper is touched by the reaper's thread alone.
    private let condition = NSCondition()
    private var queue: [HelperProcess] = []
    /// A helper taken from `queue` and not yet reaped.
    private var reaping: HelperProcess?
    private var running = false

    /// Sends `helper` SIGKILL now and reaps it later (its channel is closed then). It is in `pending` before it can
    /// be a zombie.
    func kill(_ helper: HelperProcess) {
        condition.lock()
        queue.append(helper)
        helper.sendKill()
        if !running {
            running = true
            Thread.detachNewThread { [self] in reapQueued() }
        }
        condition.unlock()
    }

    /// The pids killed and not yet reaped (zombies or dying): not orphans for `HelperTemplate.reapOrphans`.
    var pending: [pid_t] {
        condition.lock()
        defer { condition.unlock() }
        return queue.map(\.pid) + (reaping.map { [$0.pid] } ?? [])
    }

    /// Waits until every helper killed so far is reaped.
    func drain() {
        condition.lock()
        while !queue.isEmpty || reaping != nil { condition.wait() }
        condition.unlock()
    }

    /// The thread: reaps the queued helpers in the order they were killed, and ends when none is left (the next
    /// `kill` starts another).
    private func reapQueued() {
        condition.lock()
        while !queue.isEmpty {
            let helper = queue.removeFirst()
            reaping = helper
            condition.unlock()
            helper.reap()
            condition.lock()
            reaping = nil
            condition.broadcast()
        }
        running = false
        condition.broadcast()
        condition.unlock()
    }
}
