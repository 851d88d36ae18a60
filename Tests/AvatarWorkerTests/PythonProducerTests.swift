import Foundation
import TestEnvironment
import Testing

@testable import AvatarWorker

@Suite(
    "Interoperability (integration)",
    .requires(.database, .kafka, .python))
struct PythonProducerTests {
    @Test("a request produced from Python with the generated classes is completed by the worker")
    func pythonProducer() async throws {
        try await withHarness { harness in
            let python = try TestService.python.require()
            let requests = try EventReader(
                kafka: harness.kafka, topics: [harness.topics.requests], logger: harness.logger)
            defer { requests.close() }
            try harness.startWorker()
            let source = try harness.upload("orientation/Landscape_6.jpg")
            let jobID = "py-\(UUID().uuidString.lowercased())"
            let user = UUID()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = [
                TestFiles.url("Tests/AvatarWorkerTests/python/produce_request.py")
                    .path,
                harness.kafka.bootstrapServers, harness.topics.requests, jobID, user.uuidString.lowercased(), source,
            ]
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
            // The producer starts the job's trace.
            let request = try #require(try await requests.waitFor(harness.topics.requests, count: 1).first)
            #expect(request.headerString(TraceParent.headerName).flatMap(TraceParent.init(header:))?.isSampled == true)

            guard let result = try await harness.events.results(harness.topics.results, jobs: [jobID]).first else {
                // Say where the job stopped: never consumed (no ledger row) or consumed and not finished.
                let status = try harness.database.withConnection { connection in
                    try connection.query("SELECT status FROM avatar_crop_jobs WHERE job_id = $1", [.text(jobID)])
                        .rows.first?.text("status")
                }
                Issue.record("no result; the ledger row says \(status ?? "nothing (the worker never started the job)")")
                return
            }
            guard case .success(let success) = result.outcome else {
                Issue.record("expected success, got \(result)")
                return
            }
            #expect(success.avatarVersion == 1)
            #expect(!success.blurhash.isEmpty)
            #expect(success.renditions.map(\.size) == [80])
            #expect(try harness.store.exists("users/\(user.uuidString.lowercased())/avatar_80.png"))
        }
    }
}
