import Foundation
import Messaging
import Testing

@testable import AvatarWorker

/// The worker's flow control without a broker: events in, actions out (`PartitionFlow`).
@Suite("Partition flow")
struct PartitionFlowTests {
    static let p0 = TopicPartition(topic: "requests", partition: 0)
    static let p1 = TopicPartition(topic: "requests", partition: 1)

    static func flow(maxBuffered: Int = 4, drain: Duration = .seconds(10)) -> PartitionFlow {
        var flow = PartitionFlow(
            settings: .init(
                maxBufferedPerPartition: maxBuffered, drainDeadline: drain, publishRetry: PartitionFlow.publishRetry))
        flow.assigned([p0, p1])
        return flow
    }

    static func at(_ partition: TopicPartition, _ offset: Int64) -> JobPosition {
        JobPosition(partition: partition, offset: offset)
    }

    @Test("a partition pauses at its backlog limit and resumes at half, never twice")
    func pauseAndResume() {
        var flow = Self.flow(maxBuffered: 4)
        for offset in Int64(0)..<3 { #expect(flow.received(Self.at(Self.p0, offset)) == nil) }
        #expect(flow.received(Self.at(Self.p0, 3)) == PartitionFlow.Pause(partition: Self.p0))
        #expect(flow.received(Self.at(Self.p0, 4)) == nil, "already paused")
        #expect(flow.isPaused(Self.p0) && !flow.isPaused(Self.p1))
        #expect(flow.backlog(Self.p0) == 5)
        #expect(flow.published(Self.at(Self.p0, 0), true, attempt: 1) == .finished(resume: nil))
        #expect(flow.published(Self.at(Self.p0, 1), true, attempt: 1) == .finished(resume: nil))
        #expect(flow.published(Self.at(Self.p0, 2), true, attempt: 1) == .finished(resume: Self.p0))
        #expect(!flow.isPaused(Self.p0))
        #expect(flow.published(Self.at(Self.p0, 3), true, attempt: 1) == .finished(resume: nil))
        #expect(flow.jobsInFlight == 1)
    }

    @Test("a paused partition is not resumed once the worker is stopping")
    func noResumeWhileStopping() {
        var flow = Self.flow(maxBuffered: 2)
        _ = flow.received(Self.at(Self.p0, 0))
        #expect(flow.received(Self.at(Self.p0, 1)) != nil)
        _ = flow.beginDrain(now: Date())
        #expect(flow.published(Self.at(Self.p0, 0), true, attempt: 1) == .finished(resume: nil))
        #expect(flow.stopping)
    }

    @Test("the commit stops at the lowest job not yet finished, whatever order they finish in")
    func commitsTheLowestUnfinishedOffset() {
        var flow = Self.flow(maxBuffered: 100)
        for offset in Int64(10)..<15 { _ = flow.received(Self.at(Self.p0, offset)) }
        #expect(flow.committable().isEmpty)
        for offset: Int64 in [13, 11, 14] { _ = flow.published(Self.at(Self.p0, offset), true, attempt: 1) }
        #expect(flow.committable().isEmpty, "offset 10 is still running")
        _ = flow.published(Self.at(Self.p0, 10), true, attempt: 1)
        #expect(flow.committable() == [Self.p0: 12])
        flow.committed([Self.p0: 12])
        #expect(flow.committable().isEmpty, "no progress since the commit")
        _ = flow.published(Self.at(Self.p0, 12), true, attempt: 1)
        #expect(flow.committable() == [Self.p0: 15])
        #expect(flow.jobsInFlight == 0)
    }

    @Test("events retried through the publish policy; a job given up is not committed and stops the worker")
    func publishRetriesThenGivesUp() throws {
        var flow = Self.flow()
        _ = flow.received(Self.at(Self.p0, 0))
        _ = flow.received(Self.at(Self.p0, 1))
        _ = flow.published(Self.at(Self.p0, 1), true, attempt: 1)
        let policy = PartitionFlow.publishRetry
        for attempt in 1..<policy.maxAttempts {
            #expect(
                flow.published(Self.at(Self.p0, 0), false, attempt: attempt)
                    == .retry(after: policy.delay(afterAttempt: attempt)))
        }
        #expect(!flow.stopping)
        let last = flow.published(Self.at(Self.p0, 0), false, attempt: policy.maxAttempts)
        guard case .gaveUp(nil, let failure) = last else {
            Issue.record("expected the flow to give up, got \(last)")
            return
        }
        #expect(flow.failure == failure)
        #expect(flow.stopping)
        #expect(flow.jobsInFlight == 0, "the job is no longer held")
        #expect(flow.committable().isEmpty, "its offset pins the partition for a successor to redo it")
    }

    @Test("a revocation while jobs run commits what finished; queued jobs are dropped, running ones are leftovers")
    func revokeWhileJobsRun() {
        var flow = Self.flow(maxBuffered: 3)
        for offset in Int64(0)..<4 { _ = flow.received(Self.at(Self.p0, offset)) }
        _ = flow.received(Self.at(Self.p1, 0))
        #expect(flow.isPaused(Self.p0))
        _ = flow.published(Self.at(Self.p0, 0), true, attempt: 1)
        // 1 is running past the revocation's deadline, 2 and 3 never started.
        let commit = flow.revoked([Self.p0], abandoned: [Self.at(Self.p0, 2), Self.at(Self.p0, 3)])
        #expect(commit == [Self.p0: 1])
        #expect(!flow.isPaused(Self.p0))
        #expect(flow.backlog(Self.p0) == 0)
        #expect(flow.jobsInFlight == 2, "the running leftover and p1's job")
        #expect(flow.committable().isEmpty, "nothing of a revoked partition is committed again")
    }

    @Test("a job finishing after its partition was revoked commits nothing, even once the partition is back")
    func lateFinishAfterRevocation() {
        var flow = Self.flow(maxBuffered: 100)
        _ = flow.received(Self.at(Self.p0, 7))
        #expect(flow.revoked([Self.p0], abandoned: []).isEmpty)
        flow.assigned([Self.p0])
        _ = flow.received(Self.at(Self.p0, 20))
        #expect(flow.published(Self.at(Self.p0, 7), true, attempt: 1) == .finished(resume: nil))
        #expect(flow.committable().isEmpty, "the successor's offset 20 is still running")
        #expect(flow.backlog(Self.p0) == 1)
        #expect(flow.jobsInFlight == 1)
        _ = flow.published(Self.at(Self.p0, 20), true, attempt: 1)
        #expect(flow.committable() == [Self.p0: 21])
    }

    @Test("a drain past its deadline commits only what finished; a revocation during it shares its deadline")
    func drainPastItsDeadline() {
        var flow = Self.flow(maxBuffered: 100, drain: .seconds(5))
        for offset in Int64(0)..<3 { _ = flow.received(Self.at(Self.p0, offset)) }
        _ = flow.published(Self.at(Self.p0, 0), true, attempt: 1)
        let start = Date(timeIntervalSince1970: 1_000)
        let deadline = flow.beginDrain(now: start)
        #expect(deadline == start.addingTimeInterval(5))
        #expect(flow.beginDrain(now: start.addingTimeInterval(2)) == deadline, "one deadline per shutdown")
        // The deadline passes with 1 and 2 still running: `close()` revokes the partition.
        let late = deadline.addingTimeInterval(1)
        #expect(flow.revocationDeadline(now: late) == deadline)
        #expect(flow.committable() == [Self.p0: 1])
        #expect(flow.revoked([Self.p0], abandoned: []) == [Self.p0: 1])
        #expect(flow.jobsInFlight == 2)
        _ = flow.published(Self.at(Self.p0, 1), true, attempt: 1)
        #expect(flow.committable().isEmpty)
    }

    @Test("the first reason to stop is the one the worker exits with")
    func firstFailureWins() {
        var flow = Self.flow()
        let first = flow.stop(reason: "2 pool threads stuck past their job deadline")
        let second = flow.stop(reason: "a job's events could not be published")
        #expect(first == second && flow.failure == first)
    }

    @Test("the lifecycle is one value: a failure during a drain keeps the drain's deadline, a drain keeps the failure")
    func lifecycle() {
        let start = Date(timeIntervalSince1970: 1_000)
        var failedFirst = Self.flow(drain: .seconds(5))
        #expect(failedFirst.lifecycle == .running && !failedFirst.stopping)
        let failure = failedFirst.stop(reason: "a job's events could not be published")
        #expect(failedFirst.lifecycle == .failed(failure) && failedFirst.stopping)
        #expect(failedFirst.shutdownDeadline == nil, "stopping, but the drain has not begun")
        let deadline = failedFirst.beginDrain(now: start)
        #expect(failedFirst.lifecycle == .draining(deadline: deadline, failure: failure))

        var drainingFirst = Self.flow(drain: .seconds(5))
        let drain = drainingFirst.beginDrain(now: start)
        #expect(drainingFirst.failure == nil)
        let late = drainingFirst.stop(reason: "a job's events could not be published")
        #expect(drainingFirst.lifecycle == .draining(deadline: drain, failure: late))
        #expect(drainingFirst.beginDrain(now: start.addingTimeInterval(3)) == drain)
    }

    @Test("assigned partitions are the flow's own record: revocations count what moved away")
    func assignedPartitions() {
        var flow = Self.flow()
        #expect(flow.partitionsAssigned == 2 && flow.partitionsRevokedTotal == 0)
        flow.assigned([Self.p0])
        #expect(flow.partitionsAssigned == 2, "an assignment of a held partition changes nothing")
        _ = flow.revoked([Self.p1], abandoned: [])
        #expect(flow.partitionsAssigned == 1 && flow.partitionsRevokedTotal == 1)
    }
}
