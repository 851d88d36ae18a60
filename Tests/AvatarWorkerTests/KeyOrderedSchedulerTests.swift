import Dispatch
import Foundation
import Imaging
import Synchronization
import Testing

@testable import AvatarWorker

@Suite("Key-ordered scheduler")
struct KeyOrderedSchedulerTests {
    struct Job: Sendable { let key: String; let sequence: Int }

    /// Records start/finish events and the peak number of jobs running at once.
    final class Recorder: Sendable {
        let state = Mutex<
            (order: [String: [Int]], running: [String: Int], total: Int, peak: Int, overlapSameKey: Bool)
        >(
            ([:], [:], 0, 0, false))

        func run(_ job: Job) {
            state.withLock { s in
                if s.running[job.key, default: 0] > 0 { s.overlapSameKey = true }
                s.running[job.key, default: 0] += 1
                s.total += 1
                s.peak = max(s.peak, s.total)
                s.order[job.key, default: []].append(job.sequence)
            }
            Thread.sleep(forTimeInterval: 0.002)
            state.withLock { s in
                s.running[job.key, default: 0] -= 1
                s.total -= 1
            }
        }
    }

    @Test("one key's jobs run in order, never overlapping; different keys run in parallel up to the width")
    func orderingAndWidth() {
        let recorder = Recorder()
        let scheduler = KeyOrderedScheduler<Job>(width: 4) { recorder.run($0) }
        let keys = (0..<8).map { "user-\($0)" }
        for sequence in 0..<25 {
            for key in keys { scheduler.submit(key: key, Job(key: key, sequence: sequence)) }
        }
        #expect(scheduler.wait(untilNoJobMatches: { _ in true }, deadline: Date().addingTimeInterval(30)))
        recorder.state.withLock { s in
            #expect(!s.overlapSameKey)
            #expect(s.peak <= 4)
            #expect(s.peak >= 2, "different users should run in parallel")
            for key in keys { #expect(s.order[key] == Array(0..<25)) }
        }
    }

    @Test("queued jobs can be taken back (revoked partitions); running ones finish")
    func removeQueued() {
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let ran = Mutex<[Int]>([])
        let scheduler = KeyOrderedScheduler<Job>(width: 1) { job in
            if job.sequence == 0 { started.signal(); gate.wait() }
            ran.withLock { $0.append(job.sequence) }
        }
        for sequence in 0..<5 { scheduler.submit(key: "a", Job(key: "a", sequence: sequence)) }
        started.wait()
        let removed = scheduler.removeQueued { $0.sequence >= 3 }
        #expect(removed.map(\.sequence).sorted() == [3, 4])
        gate.signal()
        #expect(scheduler.wait(untilNoJobMatches: { _ in true }, deadline: Date().addingTimeInterval(10)))
        #expect(ran.withLock { $0 } == [0, 1, 2])
    }

    @Test("waiting for a job that never finishes gives up at the deadline")
    func waitDeadline() {
        let gate = DispatchSemaphore(value: 0)
        let scheduler = KeyOrderedScheduler<Job>(width: 1) { _ in gate.wait() }
        scheduler.submit(key: "a", Job(key: "a", sequence: 0))
        #expect(!scheduler.wait(untilNoJobMatches: { _ in true }, deadline: Date().addingTimeInterval(0.2)))
        gate.signal()
        #expect(scheduler.wait(untilNoJobMatches: { _ in true }, deadline: Date().addingTimeInterval(10)))
    }
}

@Suite("Memory budget")
struct MemoryBudgetTests {
    @Test("a waiting job proceeds when another releases its reservation")
    func waitsForRelease() throws {
        let budget = MemoryBudget(limit: 1000)
        let first = try #require(budget.reserve(MemoryEstimate(fullResolution: 900, fallback: 100)))
        #expect(first.mode == .fullResolution)
        // 950 fits nowhere next to 900 reserved: times out.
        #expect(
            budget.reserve(MemoryEstimate(fullResolution: 950, fallback: 950), deadline: Date().addingTimeInterval(0.1))
                == nil)
        // Only the fallback fits: taken at thumbnail resolution without waiting.
        let small = try #require(budget.reserve(MemoryEstimate(fullResolution: 500, fallback: 50)))
        #expect(small.mode == .fallback && budget.inUse == 950)
        budget.release(small)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { budget.release(first) }
        let second = try #require(
            budget.reserve(
                MemoryEstimate(fullResolution: 950, fallback: 950), deadline: Date().addingTimeInterval(10)))
        #expect(second.mode == .fullResolution)
        #expect(budget.inUse == 950)
        budget.release(second)
        #expect(budget.inUse == 0)
    }

    @Test("without a deadline a job waits as long as it takes")
    func waitsWithoutDeadline() throws {
        let budget = MemoryBudget(limit: 1000)
        let first = try #require(budget.reserve(MemoryEstimate(fullResolution: 1000, fallback: 1000)))
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            if let second = budget.reserve(MemoryEstimate(fullResolution: 900, fallback: 900)) {
                budget.release(second)
            }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 0.2) == .timedOut, "must wait while the budget is full")
        budget.release(first)
        #expect(done.wait(timeout: .now() + 10) == .success)
    }

}
