import Foundation
import TestEnvironment
import Testing

@testable import AvatarWorker

/// `avatar-cropper enqueue` (the real binary, the real broker) puts trace context on what it produces.
@Suite("enqueue sets traceparent (integration)", .requires(.kafka, .database))
struct EnqueueTraceTests {
    @Test("each request carries a traceparent: the caller's with --traceparent, else a new sampled trace")
    func traceparent() async throws {
        try await withHarness(partitions: 1) { harness in
            let requests = try EventReader(
                kafka: harness.kafka, topics: [harness.topics.requests], logger: harness.logger)
            defer { requests.close() }
            let caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            let withCaller = try enqueue(harness, ["--traceparent", caller])
            let withoutCaller = try enqueue(harness, [])
            #expect(withCaller.status == 0 && withoutCaller.status == 0)
            let refused = try enqueue(harness, ["--traceparent", "00-not-a-trace"])
            #expect(refused.status != 0, "an invalid --traceparent is refused")

            let messages = try await requests.waitFor(harness.topics.requests, count: 2)
            let byJob = Dictionary(messages.compactMap { m in m.headerString(MessageHeader.jobID).map { ($0, m) } }) {
                first, _ in first
            }
            let first = try #require(byJob[withCaller.jobID]?.headerString(TraceParent.headerName))
            #expect(first == caller, "the caller's span is the parent")
            let second = try #require(byJob[withoutCaller.jobID]?.headerString(TraceParent.headerName))
            let started = try #require(TraceParent(header: second), "not a valid traceparent: \(second)")
            #expect(started.isSampled && started.traceID != TraceParent(header: caller)?.traceID)
        }
    }

    private func enqueue(_ harness: WorkerHarness, _ arguments: [String]) throws -> (status: Int32, jobID: String) {
        let process = Process()
        process.executableURL = WorkerTestSupport.executable
        process.arguments =
            ["enqueue", "--user", UUID().uuidString.lowercased(), "--source", "uploads/x.jpg", "--no-progress"]
            + arguments
        process.environment = try harness.processEnvironment()
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
