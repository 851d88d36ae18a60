import CropProtocol
import Foundation
import Storage
import TestEnvironment
import Testing

@testable import AvatarWorker

/// docs/ARCHITECTURE.md §7, on the real worker: with `worker.source-key-template` set, a request for one
/// user naming another user's upload is `INVALID_REQUEST` and publishes nothing; the user's own
/// upload is published as before.
@Suite("Source-key template (integration)", .requires(.database, .kafka))
struct SourceKeyTemplateWorkerTests {
    @Test("a request for user B naming A's upload is INVALID_REQUEST; A's own request publishes")
    func foreignUploadRefused() async throws {
        try await withHarness { harness in
            try harness.startWorker(["\(ConfigurationKey.sourceKeyTemplate.name)=uploads/{user_id}/"])
            let alice = UUID()
            let bob = UUID()
            // A's private upload, where the template puts it.
            let staged = try harness.upload("orientation/Landscape_1.jpg")
            let key = "uploads/\(alice.uuidString.lowercased())/photo.jpg"
            try harness.store.put(
                key, data: try harness.store.get(staged).data, options: PutOptions(contentType: "image/jpeg"))

            let stolen = WorkerHarness.request(user: bob, source: key)
            try await harness.enqueue(stolen)
            let refused = try #require(
                try await harness.events.results(harness.topics.results, jobs: [stolen.jobID]).first)
            guard case .failure(let failure) = refused.outcome else {
                Issue.record("B published A's upload: \(refused)")
                return
            }
            #expect(failure.errorCode == "INVALID_REQUEST")
            #expect(failure.errorClass == .permanent)
            #expect(try harness.profile(bob) == nil)

            let own = WorkerHarness.request(user: alice, source: key)
            try await harness.enqueue(own)
            let published = try #require(
                try await harness.events.results(harness.topics.results, jobs: [own.jobID]).first)
            guard case .success = published.outcome else {
                Issue.record("A's own upload was refused: \(published)")
                return
            }
            #expect(try harness.profile(alice)?.version == 1)
        }
    }
}
