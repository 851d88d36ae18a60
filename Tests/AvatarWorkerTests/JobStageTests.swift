import CropProtocol
import Messaging
import Testing

@testable import AvatarWorker

/// The job's time in `JobStage`'s words (docs/ARCHITECTURE.md §3, "Where a job's time goes"): the steps of one job
/// never overlap, the publication is split into `upload` and `database` with nothing left out, and the metrics record
/// says what the steps say.
@Suite("Job stages")
struct JobStageTests {
    private let zero = ContinuousClock.now

    private func at(_ milliseconds: Int) -> ContinuousClock.Instant { zero + .milliseconds(milliseconds) }

    /// A publication from `start` to `end` (milliseconds from `zero`) whose runs recorded `phases`.
    private func published(_ start: Int, _ end: Int, _ phases: [(JobStage, Int, Int)]) -> JobTrace {
        var trace = JobTrace()
        trace.recordPublication(
            from: at(start), to: at(end), phases: phases.map { JobStep($0.0, from: at($0.1), to: at($0.2)) })
        return trace
    }

    /// No two steps overlap.
    private func disjoint(_ steps: [JobStep]) -> Bool {
        let sorted = steps.sorted { $0.start < $1.start }
        return zip(sorted, sorted.dropFirst()).allSatisfy { $0.end <= $1.start }
    }

    @Test("a publication is its storage phases as upload and every other moment of it as database")
    func publication() {
        // Connection 0–2, lock wait 2–5, check 5–6, uploads 6–20, commit 20–24, copies and deletes 24–30, then 30–31.
        let trace = published(0, 31, [(.database, 2, 5), (.upload, 6, 20), (.database, 20, 24), (.upload, 24, 30)])
        #expect(trace.duration(of: .upload) == .milliseconds(20))
        #expect(trace.duration(of: .database) == .milliseconds(11))
        #expect(disjoint(trace.steps))
        #expect(trace.steps.allSatisfy { $0.start >= at(0) && $0.end <= at(31) })
    }

    @Test("a publication the database interrupted: its runs' phases, out of order or overlapping, stay disjoint")
    func retriedPublication() {
        let trace = published(0, 50, [(.upload, 30, 40), (.upload, 5, 15), (.database, 12, 18)])
        #expect(disjoint(trace.steps))
        #expect(trace.duration(of: .upload) + trace.duration(of: .database) == .milliseconds(50))
        #expect(trace.duration(of: .upload) == .milliseconds(20))
    }

    @Test("the metrics record's stages are the steps' durations, and the attempt's add up to at most its total")
    func record() {
        var trace = published(52, 70, [(.upload, 55, 66)])
        trace.record(.queueWait, from: at(0), to: at(4))
        trace.record(.fetch, from: at(4), to: at(9))
        trace.record(.queueWait, from: at(9), to: at(12))
        trace.record(.probe, from: at(12), to: at(13))
        trace.record(.render, from: at(13), to: at(40))
        trace.record(.encode, from: at(40), to: at(52))
        trace.total = at(71) - at(4)
        let job = CropJob(
            message: KafkaMessage(
                topic: "t", partition: 0, offset: 0, key: nil, value: [], headers: [], timestamp: nil),
            receivedAt: at(0))
        let sample = CropMetricsSample(
            JobReport(job, outcome: .failure(JobFailure(.internal, detail: "test")), trace: trace))
        let latency = sample.latency
        #expect(sample.queueWaitMs == 7)
        #expect(
            [latency.fetchMs, latency.probeMs, latency.renderMs, latency.encodeMs, latency.uploadMs, latency.dbMs]
                == [5, 1, 27, 12, 11, 7])
        #expect(latency.totalMs == 67)
        #expect(disjoint(trace.steps))
        let stages = latency.fetchMs + latency.probeMs + latency.renderMs + latency.encodeMs + latency.uploadMs
        #expect(stages + latency.dbMs <= latency.totalMs)
    }

    @Test("an empty span is not a step")
    func empty() {
        var trace = JobTrace()
        trace.record(.fetch, from: at(3), to: at(3))
        trace.record(.fetch, from: at(3), to: at(2))
        #expect(trace.steps.isEmpty && !trace.reached(.fetch))
    }
}
