import CropProtocol
import Foundation
import Synchronization
import TestEnvironment
import Testing

@testable import AvatarWorker

/// The job deadline against the publication's point of no return (`JobDeadline`): a job reported as TIMEOUT
/// never commits afterwards, and a job already committing at its deadline reports its own outcome.
@Suite("Job deadline")
struct JobDeadlineTests {
    @Test("timed out while running: the render is cancelled, the job may not commit, its thread ends nothing")
    func timedOutWhileRunning() {
        let deadline = JobDeadline()
        #expect(deadline.timeOut() == .timedOut)
        #expect(deadline.cancellation.isCancelled)
        #expect(!deadline.enterCommit())
        #expect(!deadline.claimOnReturn())
        #expect(!deadline.expire())
    }

    @Test("at the deadline inside its commit: not timed out; the returning thread ends the job")
    func deadlineWhileCommitting() {
        let deadline = JobDeadline()
        #expect(deadline.enterCommit())
        #expect(deadline.timeOut() == .committing)
        #expect(!deadline.cancellation.isCancelled)
        #expect(deadline.claimOnReturn())
        #expect(!deadline.expire(), "a job its thread ended does not expire")
        #expect(deadline.timeOut() == .ended)
    }

    @Test("a commit that never returns expires once, and its late thread then ends nothing")
    func commitThatNeverReturns() {
        let deadline = JobDeadline()
        #expect(deadline.enterCommit())
        #expect(deadline.timeOut() == .committing)
        #expect(deadline.expire())
        #expect(!deadline.expire())
        #expect(!deadline.claimOnReturn())
    }

    @Test("a job that returned before its deadline is not timed out")
    func returnedFirst() {
        let deadline = JobDeadline()
        #expect(deadline.claimOnReturn())
        #expect(deadline.timeOut() == .ended)
        #expect(!deadline.cancellation.isCancelled)
    }
}

/// The same on the real services: Postgres, the broker, the worker.
@Suite("Job deadline (integration)", .requires(.database, .kafka), .serialized)
struct WorkerDeadlineTests {
    private static let source = "size/craft-beer_640x640.jpg"
    /// Long enough for a 640 px render on a loaded machine; the hooks below sleep well past it.
    private static let timeoutSeconds = 4

    @Test("past its deadline before the commit: TIMEOUT, and the version is never bumped by the late thread")
    func timedOutBeforeCommit() async throws {
        try await withHarness { harness in
            let pastDeadline = Double(Self.timeoutSeconds) + 3
            let hooks = TestSeams(beforeCommit: { _ in Thread.sleep(forTimeInterval: pastDeadline) })
            try harness.startWorker(["worker.job-timeout-seconds=\(Self.timeoutSeconds)"], testSeams: hooks)
            let request = WorkerHarness.request(source: try harness.upload(Self.source))
            try await harness.enqueue(request)
            let result = try #require(
                try await harness.events.results(harness.topics.results, jobs: [request.jobID]).first)
            guard case .failure(let failure) = result.outcome else {
                Issue.record("expected TIMEOUT, got \(result)")
                return
            }
            #expect(failure.errorCode == "TIMEOUT")
            // Let the timed-out job's thread wake up and reach its commit: it must not commit.
            try await Task.sleep(for: .seconds(5))
            #expect(try harness.profile(request.userID) == nil, "a job reported as TIMEOUT must not bump the version")
            #expect(try harness.ledgerCount(status: "succeeded") == 0)
            let results = try await harness.events.results(harness.topics.results, jobs: [request.jobID])
            #expect(results.count == 1, "one result per job")
        }
    }

    @Test("at its deadline inside the commit: no TIMEOUT; the job's own success is its one result")
    func deadlineInsideCommit() async throws {
        try await withHarness { harness in
            let entered = Mutex(false)
            let hooks = TestSeams(whileCommitting: { _ in
                entered.withLock { $0 = true }
                Thread.sleep(forTimeInterval: Double(Self.timeoutSeconds) + 2)
            })
            try harness.startWorker(["worker.job-timeout-seconds=\(Self.timeoutSeconds)"], testSeams: hooks)
            let request = WorkerHarness.request(source: try harness.upload(Self.source))
            try await harness.enqueue(request)
            let result = try #require(
                try await harness.events.results(harness.topics.results, jobs: [request.jobID]).first)
            #expect(entered.withLock { $0 }, "the job reached its commit")
            guard case .success(let success) = result.outcome else {
                Issue.record("expected the job's own success, got \(result)")
                return
            }
            #expect(success.disposition == .applied && success.avatarVersion == 1)
            #expect(try harness.profile(request.userID)?.version == 1)
            try await Task.sleep(for: .seconds(1))
            #expect(try await harness.events.results(harness.topics.results, jobs: [request.jobID]).count == 1)
            #expect(harness.events.messages(on: harness.topics.dlq).isEmpty, "nothing dead-lettered")
        }
    }
}
