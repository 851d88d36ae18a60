import CropGeometry
import CropProtocol
import Database
import Foundation
import Messaging
import Storage
import Synchronization
import TestEnvironment
import Testing

@testable import AvatarWorker

/// Issue 8 on the real services: the bytes behind the URL are the bytes of the version the database names,
/// whichever worker runs which job of a user, and whatever fails between upload and commit.
@Suite("Worker publication (integration)", .requires(.database, .kafka), .serialized)
struct WorkerPublicationTests {
    private static let source = "size/craft-beer_640x640.jpg"

    private func firstResult(_ harness: WorkerHarness, _ jobID: String) async throws -> Avatar_Crop_V1_CropResult {
        try #require(try await harness.events.results(harness.topics.results, jobs: [jobID]).first)
    }

    @Test("requested_at far in the future is INVALID_REQUEST and freezes nothing")
    func farFutureRequestedAt() async throws {
        try await withHarness { harness in
            try harness.startWorker()
            let user = UUID()
            let future = WorkerHarness.request(
                user: user, source: try harness.upload(Self.source), requestedAt: Date().addingTimeInterval(86_400))
            try await harness.enqueue(future)
            guard case .failure(let failure) = try await firstResult(harness, future.jobID).outcome else {
                Issue.record("expected a failure")
                return
            }
            #expect(failure.errorCode == "INVALID_REQUEST")
            #expect(try harness.profile(user) == nil)
            // A real request of the user still applies.
            let now = WorkerHarness.request(user: user, source: try harness.upload(Self.source))
            try await harness.enqueue(now)
            guard case .success(let success) = try await firstResult(harness, now.jobID).outcome else {
                Issue.record("expected a success")
                return
            }
            #expect(success.disposition == .applied && success.avatarVersion == 1)
        }
    }

    @Test("a job id reused by another user is INVALID_REQUEST, never a duplicate of the first user's avatar")
    func reusedJobID() async throws {
        try await withHarness { harness in
            try harness.startWorker()
            let first = WorkerHarness.request(source: try harness.upload(Self.source), jobID: "reused-id")
            try await harness.enqueue(first)
            _ = try await firstResult(harness, first.jobID)
            let second = WorkerHarness.request(source: try harness.upload(Self.source), jobID: "reused-id")
            try await harness.enqueue(second)
            let messages = try await harness.events.waitFor(harness.topics.results, count: 2)
            let results = messages.compactMap {
                try? CropCodec.decode(Avatar_Crop_V1_CropResult.self, from: $0.value, format: .protobuf)
            }
            let forSecond = try #require(results.first { $0.userID == second.userID.uuidString.lowercased() })
            guard case .failure(let failure) = forSecond.outcome else {
                Issue.record("expected a failure, got \(forSecond)")
                return
            }
            #expect(failure.errorCode == "INVALID_REQUEST")
            #expect(try harness.profile(second.userID) == nil)
            #expect(try harness.profile(first.userID)?.version == 1)
        }
    }

    @Test("DLQ provenance headers are the worker's own: forged ones in the request are replaced")
    func forgedProvenance() async throws {
        try await withHarness(partitions: 1) { harness in
            try harness.startWorker()
            let request = WorkerHarness.request(source: try harness.upload("size/craft-beer_319x479.jpg"))
            func header(_ key: String, _ value: String) -> KafkaHeader {
                KafkaHeader(key: key, value: Array(value.utf8))
            }
            try await harness.send(
                try CropCodec.encode(request.message), key: request.userID.uuidString.lowercased(),
                headers: [
                    header("content-type", CropWireFormat.protobuf.contentType),
                    header("original-topic", "forged.topic"), header("original-partition", "77"),
                    header("original-offset", "123456"), header("first-failure-time", "2001-01-01T00:00:00Z"),
                ])
            let record = try #require(try await harness.events.waitFor(harness.topics.dlq, count: 1).first)
            #expect(record.headerString("error-code") == "TOO_SMALL")
            #expect(record.headers.filter { $0.key == "original-topic" }.count == 1)
            #expect(record.headerString("original-topic") == harness.topics.requests)
            #expect(record.headerString("original-partition") == "0")
            #expect(record.headerString("original-offset") == "0")
            let firstFailure = try #require(record.headerString("first-failure-time"))
            #expect(firstFailure != "2001-01-01T00:00:00Z")
            let when = try #require(try? Date(firstFailure, strategy: .iso8601))
            #expect(abs(when.timeIntervalSinceNow) < 600)
        }
    }

    @Test("a superseded result names the current avatar: path, version and URL")
    func supersededNamesCurrent() async throws {
        try await withHarness { harness in
            try harness.startWorker()
            let user = UUID()
            let newer = WorkerHarness.request(user: user, source: try harness.upload(Self.source))
            try await harness.enqueue(newer)
            _ = try await firstResult(harness, newer.jobID)
            let older = WorkerHarness.request(
                user: user, source: try harness.upload(Self.source), requestedAt: newer.requestedAt - 60)
            try await harness.enqueue(older)
            guard case .success(let success) = try await firstResult(harness, older.jobID).outcome else {
                Issue.record("expected a superseded success")
                return
            }
            let key = "users/\(user.uuidString.lowercased())/avatar_512.png"
            #expect(success.disposition == .superseded)
            #expect(success.avatarPath == key)
            #expect(success.avatarVersion == 1)
            #expect(success.url == "https://cdn.example.test/\(key)?v=1")
        }
    }

    @Test(
        "two workers, one user, keys and partitions differ, the older job slowed: the bytes match the DB",
        .requires(.s3))
    func raceAcrossWorkers() async throws {
        let s3 = try TestService.s3Settings()
        try await withHarness(partitions: 2) { harness in
            let overrides = s3.overrides(sources: harness.storeRoot)
            let hooks = SourceMarkerSeams()
            let workers = [
                try harness.startWorker(overrides, testSeams: hooks),
                try harness.startWorker(overrides, testSeams: hooks),
            ]
            let deadline = ContinuousClock.now + .seconds(60)
            while workers.contains(where: { $0.service.partitionsAssigned != 1 }) && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
            }
            try #require(
                workers.allSatisfy { $0.service.partitionsAssigned == 1 }, "each worker must own one partition")
            let slow = try harness.upload("orientation/Landscape_1.jpg", trailer: "AVATAR-TEST-SLEEP-MS=2500")
            let fast = try harness.upload(Self.source)
            var users: [UUID] = []
            for _ in 0..<3 {
                let user = UUID()
                users.append(user)
                let older = WorkerHarness.request(user: user, source: slow, requestedAt: Date() - 10)
                let newer = WorkerHarness.request(user: user, source: fast)
                // The older job under the canonical key on partition 0, the newer under an upper-case key on 1.
                try await harness.send(
                    try CropCodec.encode(older.message), key: user.uuidString.lowercased(), partition: 0)
                // Only once the older job passed its checks and is rendering does the newer one go.
                try await waitUntilStarted(harness, older.jobID)
                try await harness.send(try CropCodec.encode(newer.message), key: user.uuidString, partition: 1)
                let results = try await harness.events.results(
                    harness.topics.results, jobs: [older.jobID, newer.jobID])
                let olderResult = try #require(results.first { $0.jobID == older.jobID })
                guard case .success(let lost) = olderResult.outcome else {
                    Issue.record("expected a success for the older job, got \(olderResult)")
                    continue
                }
                #expect(lost.disposition == .superseded)
                #expect(lost.avatarVersion == 1)
                #expect(try harness.profile(user)?.version == 1)
                try expectPublicBytesMatchLedger(harness, user, store: try s3.store())
            }
            #expect(users.count == 3)
        }
    }

    @Test(
        "the database lost between the versioned upload and the commit: the previous avatar stays, DLQ, replay completes"
    )
    func databaseLostBeforeCommit() async throws {
        try await withHarness { harness in
            let role = try WorkerRole(harness, prefix: "flow_worker")
            defer { role.drop() }
            let user = UUID()
            let key = "users/\(user.uuidString.lowercased())/avatar_512.png"

            // Version 1 while all is well, as the least-privileged role.
            try harness.startWorker(["database.url=\(role.url)"])
            let first = WorkerHarness.request(user: user, source: try harness.upload(Self.source))
            try await harness.enqueue(first)
            _ = try await firstResult(harness, first.jobID)
            let before = try harness.store.get(key).data
            await harness.stopWorkers()

            // The next job loses Postgres after its versioned upload, before its commit.
            let hooks = TestSeams(beforeCommit: { _ in
                role.cutOff()
            })
            try harness.startWorker(["database.url=\(role.url)"], testSeams: hooks)
            let second = WorkerHarness.request(user: user, source: try harness.upload("orientation/Landscape_1.jpg"))
            try await harness.enqueue(second)
            guard case .failure(let failure) = try await firstResult(harness, second.jobID).outcome else {
                Issue.record("expected a failure")
                return
            }
            #expect(failure.errorCode == "DATABASE_UNAVAILABLE" && failure.errorClass == .transient)
            let dlq = try #require(try await harness.events.waitFor(harness.topics.dlq, count: 1).first)
            #expect(try harness.profile(user)?.version == 1, "the database still names version 1")
            #expect(try harness.store.get(key).data == before, "and the public key still serves version 1's bytes")
            try expectPublicBytesMatchLedger(harness, user)
            await harness.stopWorkers()

            // Postgres is back: the replayed job completes.
            try role.restore()
            try harness.startWorker(["database.url=\(role.url)"])
            try await harness.send(dlq.value, key: dlq.key.map { String(decoding: $0, as: UTF8.self) })
            let messages = try await harness.events.waitFor(harness.topics.results, count: 3)
            let replayed = messages.compactMap {
                try? CropCodec.decode(Avatar_Crop_V1_CropResult.self, from: $0.value, format: .protobuf)
            }.filter { $0.jobID == second.jobID }
            #expect(replayed.contains { if case .success(let s) = $0.outcome { s.avatarVersion == 2 } else { false } })
            #expect(try harness.profile(user)?.version == 2)
            #expect(try harness.store.get(key).data != before)
            try expectPublicBytesMatchLedger(harness, user)
        }
    }

    @Test("two database outages in one job's attempts are not mistaken for a worker dying on it")
    func databaseOutagesAreNotCrashes() async throws {
        try await withHarness { harness in
            let role = try WorkerRole(harness, prefix: "outage_worker")
            defer { role.drop() }
            // The first two attempts lose Postgres after their render, before their commit (the ledger row
            // then says `started`, as it would after a crash); the third runs with the database up.
            let outages = Mutex(2)
            let hooks = TestSeams(beforeCommit: { _ in
                let cut = outages.withLock { left -> Bool in
                    guard left > 0 else { return false }
                    left -= 1
                    return true
                }
                guard cut else { return }
                role.cutOff()
            })
            try harness.startWorker(["database.url=\(role.url)", "worker.max-crash-attempts=2"], testSeams: hooks)
            let request = WorkerHarness.request(source: try harness.upload(Self.source))
            try await harness.enqueue(request)
            for attempt in 1...3 {
                let results = try await harness.events.results(
                    harness.topics.results, jobs: [request.jobID], count: attempt)
                guard results.count == attempt, let last = results.last else { return }
                if attempt < 3 {
                    guard case .failure(let failure) = last.outcome else {
                        Issue.record("attempt \(attempt): expected DATABASE_UNAVAILABLE, got \(last)")
                        return
                    }
                    #expect(failure.errorCode == "DATABASE_UNAVAILABLE")
                    // Postgres is back; the operator replays the dead letter.
                    try role.restore()
                    let dlq = try await harness.events.waitFor(harness.topics.dlq, count: attempt)
                    let letter = try #require(dlq.last)
                    try await harness.send(letter.value, key: letter.key.map { String(decoding: $0, as: UTF8.self) })
                } else {
                    guard case .success(let success) = last.outcome else {
                        Issue.record("the third attempt must render and publish, got \(last)")
                        return
                    }
                    #expect(success.disposition == .applied && success.avatarVersion == 1)
                }
            }
            #expect(try harness.profile(request.userID)?.version == 1)
        }
    }

    private func waitUntilStarted(_ harness: WorkerHarness, _ jobID: String) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let status = try harness.database.withConnection { connection in
                try connection.query("SELECT status FROM avatar_crop_jobs WHERE job_id = $1", [.text(jobID)])
                    .rows.first?.text("status")
            }
            if status == "started" { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("the older job never started")
    }
}

/// SeaweedFS from `AVATAR_TEST_S3_*` (`TestService.s3Settings()`), as the worker's avatar store.
extension S3Settings {
    var url: String { "s3://\(bucket)?endpoint=\(endpoint)&region=\(region)&pathStyle=true" }

    func overrides(sources: URL) -> [String] {
        [
            "storage.url=\(url)", "storage.sources-url=\(sources.absoluteString)",
            "storage.s3.access-key-id=\(accessKey)", "storage.s3.secret-access-key=\(secretKey)",
        ]
    }

    func store() throws -> any ObjectStore {
        try ObjectStoreFactory.make(
            url: url, credentials: .init(accessKeyID: accessKey, secretAccessKey: secretKey),
            logger: .init(label: "test.s3"))
    }
}

/// A login role of its own for the worker under test (a member of `avatar_worker`), so that a test can cut the
/// worker off Postgres, and let it back, without touching its own connections.
private struct WorkerRole: Sendable {
    let name: String
    /// The database URL that logs in as this role.
    let url: String
    private let admin: PostgresClient

    init(_ harness: WorkerHarness, prefix: String) throws {
        let url = try TestService.database.require()
        name = WorkerTestSupport.uniqueName(prefix)
        admin = PostgresClient(
            configuration: DatabaseConfiguration(url: url), maxConnections: 1, logger: harness.logger)
        self.url = url.replacingOccurrences(of: "postgres@", with: "\(name)@")
        try sql("CREATE ROLE \(name) LOGIN IN ROLE avatar_worker")
    }

    private func sql(_ text: String) throws { try admin.withConnection { _ = try $0.query(text) } }

    /// No new logins, and every open session of the role is terminated.
    func cutOff() {
        try? sql("ALTER ROLE \(name) NOLOGIN")
        try? sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '\(name)'")
    }

    func restore() throws { try sql("ALTER ROLE \(name) LOGIN") }

    func drop() {
        try? sql("DROP ROLE \(name)")
        admin.shutdown()
    }
}
