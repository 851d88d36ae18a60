import CropGeometry
import CropProtocol
import Database
import Foundation
import Storage
import TestEnvironment
import Testing

@testable import AvatarWorker

@Suite("Source deletion")
struct SourceDeletionTests {
    @Test("the sweep interval is half the delay, between 1 and 60 seconds; the probe key is under the sources' prefix")
    func sweepIntervalAndProbeKey() throws {
        #expect(SourceDeletionSweeper.interval(delay: .zero) == .seconds(1))
        #expect(SourceDeletionSweeper.interval(delay: .seconds(10)) == .seconds(5))
        #expect(SourceDeletionSweeper.interval(delay: .seconds(3600)) == .seconds(60))
        #expect(SourceDeletionQueue.probeKey(template: nil) == "avatar-cropper-delete-check")
        let template = try SourceKeyTemplate("uploads/{user_id}/")
        #expect(SourceDeletionQueue.probeKey(template: template) == "uploads/avatar-cropper-delete-check")
    }
}

/// `storage.delete-source = after-success` with a real worker on real Postgres, the broker and storage (the local
/// directory and SeaweedFS over S3): a re-crop of one upload still finds it, the upload goes once the delay has
/// passed, and a store that refuses deletes is visible (`/readyz`, `avatar_source_deletions_total`) instead of a
/// warning line only.
@Suite("Source deletion (integration)", .requires(.database, .kafka, .s3), .serialized)
struct SourceDeletionWorkerTests {
    /// Long enough that the third crop, sent once the first two's results are read, starts within it on a loaded
    /// machine (4 s was not: its upload was gone); the sweep runs every half of it.
    static let delaySeconds = 10

    @Test(
        "a re-crop of one upload, right after the first and after its result: all apply; the upload goes after the delay",
        arguments: WorkerStore.allCases)
    func recropOfOneUpload(store: WorkerStore) async throws {
        try await withHarness(partitions: 1, store: store) { harness in
            let parts = try harness.startWorker([
                "storage.delete-source=after-success", "storage.delete-source-delay-seconds=\(Self.delaySeconds)",
            ])
            let values = try harness.values()
            let ready = await TelemetryEndpoints.readiness(for: parts, values: values).report()
            #expect(
                ready.checks.contains { $0.name == "source-deletion" && $0.ok },
                "the credentials may delete: \(ready.checks)")

            let user = UUID()
            let source = try harness.upload("size/craft-beer_640x640.jpg")
            let first = WorkerHarness.request(user: user, source: source, requestedAt: Date() - 2)
            let second = WorkerHarness.request(
                user: user, source: source, input: .pose(EditorPose(scale: 1.5, tx: 10, ty: 0), reference: nil),
                requestedAt: Date() - 1)
            // The second crop right behind the first, in one batch.
            try await harness.enqueue(first)
            try await harness.enqueue(second)
            let both = try await harness.events.results(harness.topics.results, jobs: [first.jobID, second.jobID])
            #expect(both.map(\.success.disposition) == [.applied, .applied], "\(both)")
            // The third once the others' results are out, as a user who edits the crop again.
            let third = WorkerHarness.request(
                user: user, source: source, input: .pose(EditorPose(scale: 2, tx: -20, ty: 5), reference: nil))
            try await harness.enqueue(third)
            let last = try #require(try await harness.events.results(harness.topics.results, jobs: [third.jobID]).first)
            #expect(last.success.disposition == .applied, "\(last)")
            #expect(last.success.avatarVersion == 3)
            #expect(try harness.profile(user)?.version == 3)
            let appliedAt = ContinuousClock.now

            // Kept for the delay after the last job done with it, then deleted by the sweep, its row with it.
            #expect(try harness.store.exists(source), "the upload went before the delay had passed")
            try await TelemetryTestSupport.waitUntil("the upload to be deleted", timeout: .seconds(45)) {
                try !harness.store.exists(source)
            }
            #expect(ContinuousClock.now - appliedAt >= .seconds(Self.delaySeconds - 2))
            // The sweep deletes the object, then its row (the store and the database are not one transaction).
            try await TelemetryTestSupport.waitUntil("the deletion's row to go", timeout: .seconds(10)) {
                try pending(harness) == 0
            }
        }
    }

    @Test("a bucket whose policy refuses deletes: /readyz says so, the failures are counted, the source stays")
    func deletesRefused() async throws {
        try await withHarness(partitions: 1, store: .s3, denyDelete: "uploads/") { harness in
            let user = UUID()
            let key = "uploads/\(user.uuidString.lowercased())/photo.jpg"
            let photo = try WorkerTestSupport.photo(["size/craft-beer_640x640.jpg"])
            try harness.store.put(
                key, data: Array(try Data(contentsOf: photo)), options: PutOptions(contentType: "image/jpeg"))
            let request = WorkerHarness.request(user: user, source: key)
            try await harness.enqueue(request)

            // The real worker, for its /metrics and /readyz.
            let port = try TelemetryTestSupport.freePort()
            var environment = try harness.processEnvironment()
            environment[ConfigurationKey.storageDeleteSource.environmentName] = "after-success"
            environment[ConfigurationKey.storageDeleteSourceDelaySeconds.environmentName] = "0"
            environment[ConfigurationKey.sourceKeyTemplate.environmentName] = "uploads/{user_id}/"
            environment[ConfigurationKey.httpPort.environmentName] = "\(port)"
            let worker = Process()
            worker.executableURL = WorkerTestSupport.executable
            worker.arguments = ["worker"]
            worker.environment = environment
            worker.standardOutput = FileHandle.nullDevice
            worker.standardError = FileHandle.nullDevice
            try worker.run()
            defer {
                kill(worker.processIdentifier, SIGTERM)
                worker.waitUntilExit()
            }

            let result = try #require(
                try await harness.events.results(harness.topics.results, jobs: [request.jobID], timeout: .seconds(120))
                    .first)
            #expect(result.success.disposition == .applied, "the job's outcome stands: \(result)")
            let base = "http://127.0.0.1:\(port)"
            try await TelemetryTestSupport.waitUntil("failed source deletions to be counted", timeout: .seconds(60)) {
                let metrics = try await TelemetryTestSupport.request(base + "/metrics").text
                return Self.value(of: #"\#(MetricName.sourceDeletions){result="failed"}"#, in: metrics) >= 1
            }
            let metrics = try await TelemetryTestSupport.request(base + "/metrics").text
            #expect(Self.value(of: #"\#(MetricName.sourceDeletions){result="deleted"}"#, in: metrics) == 0)
            let readyz = try await TelemetryTestSupport.request(base + "/readyz")
            #expect(readyz.status == 503, "not ready: \(readyz.text)")
            #expect(
                readyz.text.contains("source-deletion") && readyz.text.contains(TelemetryEndpoints.accessDeniedDetail))
            #expect(try harness.store.exists(key), "the store refused the delete")
            #expect(try pending(harness) == 1, "the deletion stays recorded, tried again at every sweep")
        }
    }

    @Test("a forget makes the user's pending source deletions due at once, and so does a later job of theirs")
    func forgetExpeditesPendingDeletions() async throws {
        try await withHarness(partitions: 1, store: .s3) { harness in
            let user = UUID()
            let bystander = UUID()
            let queue = SourceDeletionQueue(client: harness.database, sources: harness.store, delay: .seconds(3600))
            let before = Date() - 60
            try queue.schedule("uploads/\(user)/a.jpg", userID: user, requestedAt: before)
            try queue.schedule("uploads/\(bystander)/b.jpg", userID: bystander, requestedAt: before)
            #expect(try dueNow(harness, user) == 0, "an hour away before the forget")

            let forgetting = UserForgetting(
                database: harness.database, avatars: harness.store, lockTimeout: .seconds(10), clockSkew: 0,
                results: nil, logger: harness.logger)
            _ = try await offPool { try forgetting.run(userID: user, requestedAt: Date()) }
            #expect(try dueNow(harness, user) == 1, "the forgotten user's upload is due at once")
            #expect(try dueNow(harness, bystander) == 0, "another user's waits its delay")

            // A job the tombstone covers, settled after the forget (a redelivery), records its key due at once.
            try queue.schedule("uploads/\(user)/c.jpg", userID: user, requestedAt: before)
            #expect(try dueNow(harness, user) == 2)
        }
    }

    @Test("window 7: a forget deletes the user's recorded sources before it returns; another user's wait their delay")
    func forgetDeletesRecordedSources() async throws {
        try await withHarness(partitions: 1, store: .s3) { harness in
            let user = UUID()
            let bystander = UUID()
            let mine = try harness.upload("size/craft-beer_319x320.jpg")
            let theirs = try harness.upload("size/craft-beer_319x320.jpg")
            for (key, owner) in [(mine, user), (theirs, bystander)] {
                try SourceDeletionQueue(client: harness.database, sources: harness.store, delay: .seconds(3600))
                    .schedule(key, userID: owner, requestedAt: Date() - 60)
            }
            let erased = try await offPool {
                try UserForgetting(
                    database: harness.database, avatars: harness.store, lockTimeout: .seconds(10), clockSkew: 0,
                    sources: harness.store, results: nil, logger: harness.logger
                ).run(userID: user, requestedAt: Date())
            }
            #expect(erased.sources == 1)
            #expect(try !harness.store.exists(mine), "gone when the forget returns, no sweep needed")
            #expect(try harness.store.exists(theirs))
            #expect(try pending(harness) == 1, "only the bystander's deletion is left")
        }
    }

    // MARK: - Helpers

    /// The user's deletions due now.
    private func dueNow(_ harness: WorkerHarness, _ user: UUID) throws -> Int64 {
        try harness.database.withConnection { connection in
            try connection.query(
                "SELECT count(*) AS n FROM avatar_source_deletions WHERE user_id = $1 AND due_at <= now()",
                [.uuid(user)]
            ).rows.first?.int("n") ?? 0
        }
    }

    /// Deletions recorded and not done yet.
    private func pending(_ harness: WorkerHarness) throws -> Int64 {
        try harness.database.withConnection { connection in
            try connection.query("SELECT count(*) AS n FROM avatar_source_deletions").rows.first?.int("n") ?? 0
        }
    }

    /// A sample's value in Prometheus' text format (0 when absent).
    private static func value(of series: String, in text: String) -> Double {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
            .flatMap { $0.split(separator: " ").last.flatMap { Double($0) } } ?? 0
    }
}
