import CropGeometry
import CropProtocol
import Dispatch
import Foundation
import Messaging
import Storage
import Synchronization
import TestEnvironment
import Testing

@testable import AvatarWorker

/// The job flow end to end on real Postgres, the Kafka-protocol broker and object storage (the publication's
/// promises on both stores: the local directory and SeaweedFS over S3).
@Suite("Worker flow (integration)", .requires(.database, .kafka))
struct WorkerFlowTests {
    @Test(
        "a crop request becomes a published avatar, a result event and a numeric-only metrics record",
        .requires(.s3), arguments: WorkerStore.allCases)
    func happyPath(store: WorkerStore) async throws {
        try await withHarness(store: store) { harness in
            try harness.startWorker()
            let user = UUID()
            let request = WorkerHarness.request(
                user: user, source: try harness.upload("orientation/Landscape_6.jpg"),
                input: .pose(EditorPose(scale: 0.9, tx: 10, ty: -5), reference: PixelSize(width: 900, height: 600)))
            try await harness.enqueue(request)

            let results = try await harness.events.results(harness.topics.results, jobs: [request.jobID])
            let result = try #require(results.first)
            guard case .success(let success) = result.outcome else {
                Issue.record("expected success, got \(result)")
                return
            }
            let key = "users/\(user.uuidString.lowercased())/avatar_512.png"
            #expect(success.avatarPath == key)
            #expect(success.avatarVersion == 1)
            #expect(success.url == "https://cdn.example.test/\(key)?v=1")
            #expect(success.disposition == .applied)
            let avatar = try harness.store.get(key)
            #expect(Array(avatar.data.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
            let profile = try #require(try harness.profile(user))
            #expect(profile.version == 1 && profile.path == key)
            #expect(try harness.ledgerCount(status: "succeeded") == 1)

            let metrics = try await harness.events.waitFor(harness.topics.metrics, count: 1)
            #expect(metrics.count == 1)
            let sample = try CropCodec.decode(
                Avatar_Crop_V1_CropMetrics.self, from: metrics[0].value, format: .protobuf)
            #expect(sample.outcome == .applied)
            #expect(sample.sourceWidth == 1350 && sample.sourceHeight == 900)  // Tests/Fixtures: 900×1350, EXIF 6
            #expect(sample.sMin > 0 && sample.sMax >= sample.sMin)
            #expect(sample.latency.totalMs > 0)
            #expect(sample.latency.uploadMs > 0, "storage writes are timed as the upload stage")
            // Each stage once, where it happens: they do not overlap (the render's encoding is the encode stage).
            let latency = sample.latency
            #expect(latency.renderMs > 0 && latency.encodeMs > 0)
            #expect(
                latency.fetchMs + latency.probeMs + latency.renderMs + latency.encodeMs + latency.uploadMs
                    + latency.dbMs <= latency.totalMs, "\(latency)")
            #expect(metrics[0].key == nil, "metrics carry no ids")
            // Window 5 (docs/DATA.md): its finished_at and its Kafka timestamp are the minute the job finished in,
            // never the result's exact time.
            #expect(sample.finishedAt.seconds % 60 == 0 && sample.finishedAt.nanos == 0)
            let minute = sample.finishedAt.date
            #expect(metrics[0].timestamp == minute)
            let exact = result.finishedAt.date.timeIntervalSince(minute)
            #expect(exact >= 0 && exact < 60)
        }
    }

    @Test(
        "the same job delivered twice bumps the version once; the repeat reports a duplicate", .requires(.s3),
        arguments: WorkerStore.allCases)
    func duplicateDelivery(store: WorkerStore) async throws {
        try await withHarness(store: store) { harness in
            try harness.startWorker()
            let user = UUID()
            let request = WorkerHarness.request(user: user, source: try harness.upload("size/craft-beer_640x640.jpg"))
            try await harness.enqueue(request)
            try await harness.enqueue(request)
            let messages = try await harness.events.waitFor(harness.topics.results, count: 2)
            let results = messages.compactMap {
                try? CropCodec.decode(Avatar_Crop_V1_CropResult.self, from: $0.value, format: .protobuf)
            }
            let dispositions = results.compactMap { result -> Avatar_Crop_V1_CropResult.Disposition? in
                if case .success(let success) = result.outcome { return success.disposition }
                return nil
            }
            #expect(dispositions.sorted { $0.rawValue < $1.rawValue } == [.applied, .duplicate])
            #expect(try harness.profile(user)?.version == 1)
            #expect(try harness.ledgerCount(status: "succeeded") == 1)
        }
    }

    @Test(
        "an older request arriving after a newer one changes nothing", .requires(.s3), arguments: WorkerStore.allCases)
    func olderAfterNewer(store: WorkerStore) async throws {
        try await withHarness(store: store) { harness in
            try harness.startWorker()
            let user = UUID()
            let newer = WorkerHarness.request(user: user, source: try harness.upload("size/craft-beer_640x640.jpg"))
            try await harness.enqueue(newer)
            _ = try await harness.events.results(harness.topics.results, jobs: [newer.jobID])
            let published = try harness.store.get("users/\(user.uuidString.lowercased())/avatar_512.png")

            let older = WorkerHarness.request(
                user: user, source: try harness.upload("orientation/Landscape_1.jpg"),
                requestedAt: newer.requestedAt.addingTimeInterval(-60))
            try await harness.enqueue(older)
            let results = try await harness.events.results(harness.topics.results, jobs: [older.jobID])
            guard case .success(let success) = try #require(results.first).outcome else {
                Issue.record("expected a superseded success")
                return
            }
            #expect(success.disposition == .superseded)
            #expect(try harness.profile(user)?.version == 1)
            #expect(
                try harness.store.get("users/\(user.uuidString.lowercased())/avatar_512.png").data == published.data)
            #expect(try harness.ledgerCount(status: "superseded") == 1)
        }
    }

    @Test("a too-small photo gives a failure result with the friendly message and a DLQ record")
    func tooSmall() async throws {
        try await withHarness { harness in
            try harness.startWorker()
            let request = WorkerHarness.request(source: try harness.upload("size/craft-beer_319x479.jpg"))
            try await harness.enqueue(request)
            let result = try #require(
                try await harness.events.results(harness.topics.results, jobs: [request.jobID]).first)
            guard case .failure(let failure) = result.outcome else {
                Issue.record("expected a failure, got \(result)")
                return
            }
            #expect(failure.errorCode == "TOO_SMALL")
            #expect(failure.errorClass == .permanent)
            #expect(failure.userMessage == "This photo is too small for a profile picture")
            let dlq = try await harness.events.waitFor(harness.topics.dlq, count: 1)
            let record = try #require(dlq.first)
            #expect(record.headerString("error-code") == "TOO_SMALL")
            #expect(record.headerString("error-class") == "permanent")
            #expect(record.headerString("original-topic") == harness.topics.requests)
            #expect(record.headerString("original-offset") != nil && record.headerString("first-failure-time") != nil)
            #expect(
                try ValidatedCropRequest(CropCodec.decodeRequest(record.value, contentType: nil)).jobID
                    == request.jobID,
                "the DLQ keeps the original bytes")
        }
    }

    @Test("a render past worker.job-timeout-seconds: its helper is killed, TIMEOUT; the one slot is free at once")
    func jobDeadline() async throws {
        try await withHarness { harness in
            let worker = try harness.startWorker(
                // 5 s: the next job, with its own deadline, must render on a machine busy with the other suites.
                ["worker.job-timeout-seconds=5", "worker.render-slots=1"], testSeams: SourceMarkerSeams())
            let user = UUID()
            // The test seam hangs the render for a minute inside its helper, as a decoder in an endless loop would.
            let hung = WorkerHarness.request(
                user: user,
                source: try harness.upload("size/craft-beer_640x640.jpg", trailer: "AVATAR-TEST-SLEEP-MS=60000"),
                requestedAt: Date() - 5)
            let next = WorkerHarness.request(user: user, source: try harness.upload("size/craft-beer_640x640.jpg"))
            let clock = ContinuousClock()
            let start = clock.now
            try await harness.enqueue(hung)
            try await harness.enqueue(next)
            let results = try await harness.events.results(harness.topics.results, jobs: [hung.jobID, next.jobID])
            // The hung helper was killed at the deadline: the next job did not wait for its minute.
            #expect(clock.now - start < .seconds(30))
            let timedOut = try #require(results.first { $0.jobID == hung.jobID })
            guard case .failure(let failure) = timedOut.outcome else {
                Issue.record("expected TIMEOUT, got \(timedOut)")
                return
            }
            #expect(failure.errorCode == "TIMEOUT")
            #expect(failure.errorClass == .transient)
            let published = try #require(results.first { $0.jobID == next.jobID })
            guard case .success(let success) = published.outcome else {
                Issue.record("expected the next job to publish, got \(published)")
                return
            }
            #expect(success.avatarVersion == 1)
            let dlq = try await harness.events.waitFor(harness.topics.dlq, count: 1)
            #expect(dlq.first?.headerString("error-code") == "TIMEOUT")
            // The timed-out job publishes nothing more and bumps nothing; the pool is whole again.
            try await Task.sleep(for: .seconds(2))
            #expect(harness.events.messages(on: harness.topics.results).count == 2)
            #expect(try harness.profile(user)?.version == 1)
            #expect(worker.renderHelpers.liveHelpers == 2, "the killed helper was replaced")
        }
    }

    @Test("one render slot: a job held before its commit does not hold back another user's render")
    func publicationOverlapsRender() async throws {
        try await withHarness { harness in
            let first = WorkerHarness.request(source: try harness.upload("size/craft-beer_640x640.jpg"))
            let second = WorkerHarness.request(source: try harness.upload("orientation/Landscape_1.jpg"))
            let firstWaiting = DispatchSemaphore(value: 0)
            let secondRendered = DispatchSemaphore(value: 0)
            let overlapped = Mutex<Bool?>(nil)
            // The first job stops after its render and upload, before its commit, until the second job has
            // rendered too: with the render slot still held (or one job in flight) that never happens.
            let hooks = TestSeams(beforeCommit: { jobID in
                guard jobID == first.jobID else {
                    secondRendered.signal()
                    return
                }
                firstWaiting.signal()
                let rendered = secondRendered.wait(timeout: .now() + 20) == .success
                overlapped.withLock { $0 = rendered }
            })
            try harness.startWorker(["worker.render-slots=1", "worker.jobs-in-flight=2"], testSeams: hooks)
            try await harness.enqueue(first)
            let reachedCommit = await offPool { firstWaiting.wait(timeout: .now() + 60) == .success }
            try #require(reachedCommit, "the first job never reached its commit")
            try await harness.enqueue(second)
            let results = try await harness.events.results(harness.topics.results, jobs: [first.jobID, second.jobID])
            #expect(overlapped.withLock { $0 } == true, "the second render waited for the first job's publication")
            for result in results {
                guard case .success(let success) = result.outcome else {
                    Issue.record("expected success, got \(result)")
                    continue
                }
                #expect(success.avatarVersion == 1)
            }
        }
    }

    @Test("a malformed message goes to the DLQ and the worker keeps consuming")
    func malformedMessage() async throws {
        try await withHarness(partitions: 1) { harness in
            try harness.startWorker()
            let garbage: [UInt8] = Array("{not a crop request".utf8)
            try await harness.send(
                garbage, key: "someone",
                headers: [KafkaHeader(key: "content-type", value: Array("application/json".utf8))])
            let good = WorkerHarness.request(source: try harness.upload("size/craft-beer_640x640.jpg"))
            try await harness.enqueue(good)
            let result = try #require(
                try await harness.events.results(harness.topics.results, jobs: [good.jobID]).first)
            if case .success = result.outcome {} else { Issue.record("the next valid job must still succeed") }
            let dlq = try await harness.events.waitFor(harness.topics.dlq, count: 1)
            #expect(dlq.first?.value == garbage)
            #expect(dlq.first?.headerString("error-code") == "MALFORMED_REQUEST")
        }
    }

    @Test("a request in the protobuf JSON mapping is accepted")
    func jsonRequest() async throws {
        try await withHarness { harness in
            try harness.startWorker()
            let request = WorkerHarness.request(
                source: try harness.upload("colour/p3_displayp3-v4_craft-beer.jpg"),
                input: .rect(PixelRect(x: 300, y: 100, side: 700), reference: nil))
            try await harness.enqueue(request, format: .json)
            let result = try #require(
                try await harness.events.results(harness.topics.results, jobs: [request.jobID]).first)
            if case .success(let success) = result.outcome {
                #expect(success.avatarVersion == 1)
            } else {
                Issue.record("expected success, got \(result)")
            }
        }
    }

    @Test("storage failing every PUT: three attempts, a DLQ record, and the previous avatar stays")
    func storageOutage() async throws {
        try await withHarness { harness in
            let user = UUID()
            // Version 1 is published while storage works.
            try harness.startWorker()
            let first = WorkerHarness.request(user: user, source: try harness.upload("size/craft-beer_640x640.jpg"))
            try await harness.enqueue(first)
            _ = try await harness.events.results(harness.topics.results, jobs: [first.jobID])
            let key = "users/\(user.uuidString.lowercased())/avatar_512.png"
            let before = try harness.store.get(key).data
            await harness.stopWorkers()

            // Then the avatar store goes away (nothing listens on its endpoint); sources still read.
            try harness.startWorker([
                "storage.sources-url=\(harness.storeRoot.absoluteString)",
                "storage.url=s3://avatars?endpoint=http://127.0.0.1:9&region=us-east-1",
                "storage.s3.access-key-id=test", "storage.s3.secret-access-key=test",
            ])
            let second = WorkerHarness.request(user: user, source: try harness.upload("orientation/Landscape_1.jpg"))
            try await harness.enqueue(second)
            let result = try #require(
                try await harness.events.results(harness.topics.results, jobs: [second.jobID]).first)
            guard case .failure(let failure) = result.outcome else {
                Issue.record("expected a failure, got \(result)")
                return
            }
            #expect(failure.errorCode == "STORAGE_UNAVAILABLE")
            #expect(failure.errorClass == .transient)
            #expect(failure.attempts == 3)
            let dlq = try await harness.events.waitFor(harness.topics.dlq, count: 1)
            #expect(dlq.first?.headerString("attempts") == "3")
            #expect(dlq.first?.headerString("error-class") == "transient")
            #expect(try harness.profile(user)?.version == 1, "nothing in Postgres changes")
            #expect(try harness.store.get(key).data == before, "the previous avatar stays")
        }
    }
}
