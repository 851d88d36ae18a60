import CropGeometry
import CropProtocol
import Database
import Dispatch
import Foundation
import Storage
import Synchronization
import TestEnvironment
import Testing

@testable import AvatarWorker

/// The data's lifecycle on real Postgres, a real store and the real broker (docs/ARCHITECTURE.md §4): a forget
/// leaves nothing of the user, whichever side of an in-flight job it lands on; pruning keeps exactly-once.
@Suite("Data lifecycle (integration)", .requires(.database, .kafka))
struct DataLifecycleTests {
    private func publication(_ harness: WorkerHarness, beforeCommit: (@Sendable (String) -> Void)? = nil)
        -> UserPublication
    {
        UserPublication(
            client: harness.database, avatars: harness.store, uploadRetry: .none, cacheControl: "no-cache",
            lockTimeout: .seconds(60), logger: harness.logger,
            testSeams: beforeCommit.map { TestSeams(beforeCommit: $0) })
    }

    private func forgetting(_ harness: WorkerHarness) -> UserForgetting {
        // No clock skew: a request stamped right after the forget is a later one.
        UserForgetting(publication: publication(harness), clockSkew: 0)
    }

    /// The user's public avatar key (512 px PNG).
    private func key(_ user: UUID) -> String {
        AvatarKeys.avatarKey(userID: user, size: 512, format: .png)
    }

    /// The avatar and an 80 px rendition of a user, as a job publishes them.
    private func objects(_ user: UUID, _ bytes: [UInt8]) -> [UserPublication.Object] {
        [512, 80].map { size in
            UserPublication.Object(
                publicKey: AvatarKeys.avatarKey(userID: user, size: size, format: .png),
                data: bytes + [UInt8(truncatingIfNeeded: size)],
                contentType: "image/png")
        }
    }

    private func ledgerRows(_ harness: WorkerHarness, _ user: UUID) throws -> Int64 {
        try harness.database.withConnection { connection in
            try connection.query("SELECT count(*) AS n FROM avatar_crop_jobs WHERE user_id = $1", [.uuid(user)])
                .rows.first?.int("n") ?? -1
        }
    }

    /// Nothing of the user: no object under users/{uid}/, no ledger row, no profile (the schema's `profiles` is the
    /// migration's own, so the row goes).
    private func expectNothingLeft(
        _ harness: WorkerHarness, _ user: UUID, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(
            try harness.store.keys(withPrefix: AvatarKeys.userPrefix(user)) == [], sourceLocation: sourceLocation)
        #expect(try ledgerRows(harness, user) == 0, sourceLocation: sourceLocation)
        #expect(try harness.profile(user) == nil, sourceLocation: sourceLocation)
    }

    @Test("a forget erases every version, rendition and stray upload; older requests stay erased, newer start at 1")
    func forgetErasesTheUser() async throws {
        try await withHarness { harness in
            let publication = publication(harness)
            let user = UUID()
            let other = UUID()
            let start = Date()
            for (index, job) in ["a", "b", "c"].enumerated() {
                let published = try publication.run(
                    jobID: job, userID: user, requestedAt: start.addingTimeInterval(Double(index)),
                    objects: objects(user, [UInt8(index)]), blurHash: nil
                ).get()
                #expect(published.disposition == .applied(version: Int64(index + 1), path: key(user)))
            }
            _ = try publication.run(
                jobID: "other", userID: other, requestedAt: start, objects: objects(other, [9]), blurHash: nil
            ).get()
            // A versioned upload whose commit failed: no ledger row names it.
            try harness.store.put(
                AvatarKeys.versionedKey(key(user), version: 9),
                data: [1], options: PutOptions(contentType: "image/png"))
            try AvatarLedger(client: harness.database).recordFailure(
                jobID: "failed", userID: user, requestedAt: start, errorCode: "TOO_SMALL", attempts: 1,
                firstFailedAt: start)

            let erased = try forgetting(harness).run(userID: user, requestedAt: start.addingTimeInterval(-60))
            #expect(erased.ledgerRows == 4)
            #expect(erased.objects == 5, "two public keys, version 3's two objects and the stray upload")
            try expectNothingLeft(harness, user)
            #expect(try harness.profile(other)?.version == 1, "another user is untouched")
            try expectPublicBytesMatchLedger(harness, other)

            // The forget covers the newest request it erased, though it was itself sent earlier: a replay of job c
            // publishes nothing and leaves no row.
            let replay = try publication.run(
                jobID: "c", userID: user, requestedAt: start.addingTimeInterval(2), objects: objects(user, [2]),
                blurHash: nil
            ).get()
            #expect(replay.disposition == .superseded(version: 0, path: nil))
            try expectNothingLeft(harness, user)
            #expect(
                try AvatarLedger(client: harness.database).precheck(
                    jobID: "c", userID: user, requestedAt: start.addingTimeInterval(2)) == .superseded)

            // A request made after the forget starts again from version 1.
            let later = try publication.run(
                jobID: "d", userID: user, requestedAt: Date().addingTimeInterval(1), objects: objects(user, [4]),
                blurHash: nil
            ).get()
            #expect(later.disposition == .applied(version: 1, path: key(user)))
            try expectPublicBytesMatchLedger(harness, user)

            // Forgetting again is harmless and finishes the job.
            _ = try forgetting(harness).run(userID: user, requestedAt: Date())
            _ = try forgetting(harness).run(userID: user, requestedAt: Date())
            try expectNothingLeft(harness, user)
        }
    }

    /// Waits until a session waits for an advisory lock (the forget queued behind the job's publication), on a
    /// connection of its own (the harness's pool is busy with the job and the forget).
    private func waitForLockWaiter(_ harness: WorkerHarness) throws {
        let observer = try PostgresConnection.connect(
            WorkerTestSupport.database(try TestService.database.require(), schema: harness.schema),
            logger: harness.logger)
        while true {
            let waiting =
                try observer.query("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
                .rows.first?.int("n") ?? 0
            if waiting > 0 { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    @Test("a forget that waits for a job publishing under the user's lock erases what the job published")
    func forgetAfterInFlightPublication() async throws {
        try await withHarness { harness in
            let user = UUID()
            let forgetDone = DispatchSemaphore(value: 0)
            let forgetErrors = Mutex<[String]>([])
            let forgetting = forgetting(harness)
            // The job holds the user's lock (between its versioned upload and its commit) when the forget arrives.
            let publication = publication(harness) { _ in
                DispatchQueue.global().async {
                    do {
                        _ = try forgetting.run(userID: user, requestedAt: Date())
                    } catch {
                        forgetErrors.withLock { $0.append("\(error)") }
                    }
                    forgetDone.signal()
                }
                try? waitForLockWaiter(harness)
            }
            let outcome = try publication.run(
                jobID: "in-flight", userID: user, requestedAt: Date().addingTimeInterval(-1),
                objects: objects(user, [5]), blurHash: nil
            ).get()
            #expect(
                outcome.disposition == .applied(version: 1, path: key(user)),
                "the job held the lock: it published first")
            forgetDone.wait()
            #expect(forgetErrors.withLock { $0 }.isEmpty)
            try expectNothingLeft(harness, user)
        }
    }

    @Test("a job whose user is forgotten while it renders publishes nothing and removes the row it started")
    func forgetBeforeInFlightPublication() async throws {
        try await withHarness { harness in
            let user = UUID()
            let requestedAt = Date().addingTimeInterval(-1)
            let ledger = AvatarLedger(client: harness.database)
            // The job passed its precheck and started rendering...
            #expect(try ledger.precheck(jobID: "rendering", userID: user, requestedAt: requestedAt) == .proceed)
            #expect(
                try ledger.markStarted(jobID: "rendering", userID: user, requestedAt: requestedAt, maxCrashAttempts: 2)
                    == .render(attempt: 1))
            // ...when the forget ran.
            _ = try forgetting(harness).run(userID: user, requestedAt: Date())
            let outcome = try publication(harness).run(
                jobID: "rendering", userID: user, requestedAt: requestedAt, objects: objects(user, [6]),
                blurHash: nil
            ).get()
            #expect(outcome.disposition == .superseded(version: 0, path: nil))
            #expect(outcome.storageWrites.count == 0, "nothing uploaded")
            try expectNothingLeft(harness, user)
        }
    }

    /// Moves every ledger row and tombstone `days` into the past.
    private func age(_ harness: WorkerHarness, days: Int) throws {
        try harness.database.withConnection { connection in
            try connection.query(
                """
                UPDATE avatar_crop_jobs SET finished_at = finished_at - make_interval(days => $1::int4),
                       started_at = started_at - make_interval(days => $1::int4)
                """, [.int(Int64(days))])
            try connection.query(
                "UPDATE avatar_forgotten_users SET recorded_at = recorded_at - make_interval(days => $1::int4)",
                [.int(Int64(days))])
        }
    }

    @Test(
        "window 8: with a maximum request age, an older request publishes nothing and the prune deletes older tombstones"
    )
    func maxRequestAgeBoundsTombstones() async throws {
        try await withHarness { harness in
            var configuration = try WorkerTestSupport.database(
                try TestService.database.require(), schema: harness.schema)
            configuration.sessionSettings[LedgerRetention.maxRequestAgeSetting] = "336 hours"
            let aged = PostgresClient(configuration: configuration, maxConnections: 2, logger: harness.logger)
            defer { aged.shutdown() }
            let user = UUID()
            let forgotten = UUID()
            try await offPool {
                let publishing = UserPublication(
                    client: aged, avatars: harness.store, uploadRetry: .none, cacheControl: "no-cache",
                    lockTimeout: .seconds(60), logger: harness.logger)
                let old = try publishing.run(
                    jobID: "old", userID: user, requestedAt: Date() - 15 * 86_400, objects: objects(user, [1]),
                    blurHash: nil
                ).get()
                #expect(old.disposition == .superseded(version: 0, path: nil), "older than the maximum age")
                _ = try forgetting(harness).run(userID: forgotten, requestedAt: Date())
                try harness.database.withConnection { connection in
                    try connection.query(
                        "UPDATE avatar_forgotten_users SET forgotten_at = forgotten_at - interval '15 days'")
                }
                let count = {
                    try harness.database.withConnection { connection in
                        try connection.query("SELECT count(*) AS n FROM avatar_forgotten_users").rows.first?.int("n")
                    }
                }
                _ = try LedgerRetention(client: harness.database, retention: .seconds(3600), batchSize: 10).prune()
                #expect(try count() == 1, "without the setting the tombstone stays")
                _ = try LedgerRetention(client: aged, retention: .seconds(3600), batchSize: 10).prune()
                #expect(try count() == 0, "older than the maximum age: it covers nothing any more")
            }
        }
    }

    @Test("window 8: a source deletion the store still refuses a retention after it was due is pruned, a newer stays")
    func pruneBoundsRefusedSourceDeletions() async throws {
        try await withHarness { harness in
            let remaining = {
                try harness.database.withConnection { connection in
                    try connection.query("SELECT source_key FROM avatar_source_deletions ORDER BY source_key").rows
                        .map { try $0.text("source_key") }
                }
            }
            try harness.database.withConnection { connection in
                try connection.query(
                    """
                    INSERT INTO avatar_source_deletions (source_key, user_id, due_at)
                    VALUES ('uploads/a/old', $1, now() - interval '2 hours'),
                           ('uploads/a/recent', $1, now() - interval '30 minutes')
                    """, [.uuid(UUID())])
            }
            _ = try LedgerRetention(client: harness.database, retention: .seconds(3600), batchSize: 10).prune()
            #expect(try remaining() == ["uploads/a/recent"])
        }
    }

    @Test("pruning keeps the current version's row; pruned jobs replayed never bump twice or overwrite")
    func pruneKeepsTheGuarantees() async throws {
        try await withHarness { harness in
            let publication = publication(harness)
            let ledger = AvatarLedger(client: harness.database)
            let user = UUID()
            let forgotten = UUID()
            let start = Date().addingTimeInterval(-100)
            for (index, job) in ["v1", "v2"].enumerated() {
                _ = try publication.run(
                    jobID: job, userID: user, requestedAt: start.addingTimeInterval(Double(index * 10)),
                    objects: objects(user, [UInt8(index)]), blurHash: nil
                ).get()
            }
            _ = try publication.run(
                jobID: "stale", userID: user, requestedAt: start.addingTimeInterval(5), objects: objects(user, [7]),
                blurHash: nil
            ).get()
            try ledger.recordFailure(
                jobID: "failed", userID: user, requestedAt: start.addingTimeInterval(6), errorCode: "TOO_SMALL",
                attempts: 1, firstFailedAt: start)
            _ = try forgetting(harness).run(userID: forgotten, requestedAt: start)
            try age(harness, days: 30)
            // A render in progress now, of a job first seen long ago.
            _ = try ledger.markStarted(
                jobID: "rendering", userID: UUID(), requestedAt: start, maxCrashAttempts: 2)

            let retention = LedgerRetention(client: harness.database, retention: .seconds(86_400), batchSize: 2)
            #expect(try retention.prune() == 3, "v1, stale and failed: every row but the current one's")
            #expect(try harness.ledgerStatus(jobID: "v2") == "succeeded")
            #expect(try harness.ledgerStatus(jobID: "rendering") == "started")
            #expect(try harness.ledgerStatus(jobID: "v1") == nil)
            let tombstones = try harness.database.withConnection { connection in
                try connection.query("SELECT count(*) AS n FROM avatar_forgotten_users").rows.first?.int("n")
            }
            #expect(tombstones == 1, "tombstones are never pruned (migration 0009)")
            #expect(try retention.prune() == 0)

            // Replays of every pruned or kept job: the current one is a duplicate by its kept row, the older applied
            // and the stale one are superseded by the profile's avatar_requested_at.
            let key = key(user)
            let replays: [(String, Double)] = [("v2", 10), ("v1", 0), ("stale", 5)]
            var outcomes: [JobDisposition] = []
            for (job, offset) in replays {
                outcomes.append(
                    try publication.run(
                        jobID: job, userID: user, requestedAt: start.addingTimeInterval(offset),
                        objects: objects(user, [42]), blurHash: nil
                    ).get().disposition)
            }
            #expect(
                outcomes == [
                    .duplicate(version: 2, path: key), .superseded(version: 2, path: key),
                    .superseded(version: 2, path: key),
                ])
            #expect(try harness.profile(user)?.version == 2)
            try expectPublicBytesMatchLedger(harness, user)
        }
    }

    @Test("one prune at a time per schema: a prune running in this schema makes another skip, one in another not")
    func pruneLockIsPerSchema() async throws {
        try await withHarness { harness in
            let retention = LedgerRetention(client: harness.database, retention: .seconds(86_400), batchSize: 10)
            let lock = "pg_advisory_lock($1::int4, \(LedgerRetention.lockKey))"
            let unlock = "pg_advisory_unlock($1::int4, \(LedgerRetention.lockKey))"
            let namespace = [PostgresValue.int(UserPublication.lockNamespace)]
            try harness.database.withConnection { holder in
                // Another schema's prune (a deployment beside this one in the same database) is running.
                try holder.query("SELECT set_config('search_path', 'public', false)")
                try holder.query("SELECT \(lock)", namespace)
                #expect(try retention.prune() == 0, "another schema's prune made this one skip")
                try holder.query("SELECT \(unlock)", namespace)
                // A prune of this schema is running.
                try holder.query("SELECT set_config('search_path', $1, false)", [.text(harness.schema)])
                try holder.query("SELECT \(lock)", namespace)
                #expect(try retention.prune() == nil, "two prunes of one schema ran at once")
                try holder.query("SELECT \(unlock)", namespace)
            }
            #expect(try retention.prune() == 0)
        }
    }

    @Test("a prune racing replays of every job: no version bumped twice, the bytes still the version's")
    func pruneRacesReplay() async throws {
        try await withHarness { harness in
            let publication = publication(harness)
            let users = (0..<8).map { _ in UUID() }
            let start = Date().addingTimeInterval(-100)
            var jobs: [(job: String, user: UUID, requestedAt: Date)] = []
            for user in users {
                for index in 0..<3 {
                    let job = "\(user.uuidString.prefix(8))-\(index)"
                    let requestedAt = start.addingTimeInterval(Double(index))
                    _ = try publication.run(
                        jobID: job, userID: user, requestedAt: requestedAt, objects: objects(user, [UInt8(index)]),
                        blurHash: nil
                    ).get()
                    jobs.append((job, user, requestedAt))
                }
            }
            let replayed = jobs
            // Retention 0: every row but the current ones may go, while the same jobs are replayed.
            let retention = LedgerRetention(client: harness.database, retention: .zero, batchSize: 3)
            let replaying = Atomic<Bool>(true)
            let errors = Mutex<[String]>([])
            let published = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 3) { worker in
                do {
                    if worker == 0 {
                        while replaying.load(ordering: .acquiring) { _ = try retention.prune() }
                        _ = try retention.prune()
                        return
                    }
                    for round in 0..<3 {
                        for (index, job) in replayed.enumerated() where index % 2 == worker - 1 {
                            let outcome = try publication.run(
                                jobID: job.job, userID: job.user, requestedAt: job.requestedAt,
                                objects: objects(job.user, [UInt8(100 + round)]), blurHash: nil
                            ).get()
                            if case .applied = outcome.disposition { published.withLock { $0.append(job.job) } }
                        }
                    }
                    if worker == 1 { replaying.store(false, ordering: .releasing) }
                } catch {
                    errors.withLock { $0.append("\(error)") }
                    replaying.store(false, ordering: .releasing)
                }
            }
            #expect(errors.withLock { $0 }.isEmpty)
            #expect(published.withLock { $0 }.isEmpty, "a replay bumped a version")
            for user in users {
                #expect(try harness.profile(user)?.version == 3)
                try expectPublicBytesMatchLedger(harness, user)
            }
        }
    }

    @Test("the worker: a forget request on the topic erases the user and reports FORGOTTEN; sources go after success")
    func forgetRequestAndSourceDeletion() async throws {
        try await withHarness { harness in
            try harness.startWorker(["storage.delete-source=after-success", "storage.delete-source-delay-seconds=0"])
            let user = UUID()
            let source = try harness.upload("orientation/Landscape_1.jpg")
            let crop = WorkerHarness.request(user: user, source: source, requestedAt: Date().addingTimeInterval(-5))
            try await harness.enqueue(crop)
            let applied = try #require(
                try await harness.events.results(harness.topics.results, jobs: [crop.jobID]).first)
            guard case .success(let success) = applied.outcome else {
                Issue.record("expected success, got \(applied)")
                return
            }
            #expect(success.disposition == .applied)
            // Deleted by the sweep (every second with no delay; SourceDeletionWorkerTests prove the delay).
            try await TelemetryTestSupport.waitUntil("the applied job's source to be deleted", timeout: .seconds(30)) {
                try !harness.store.exists(source)
            }

            // A job that fails keeps its source for a replay.
            let small = try harness.upload("size/craft-beer_319x320.jpg")
            let failing = WorkerHarness.request(user: UUID(), source: small)
            try await harness.enqueue(failing)
            _ = try await harness.events.results(harness.topics.results, jobs: [failing.jobID])
            #expect(try harness.store.exists(small))

            let forget = ValidatedCropRequest.forget(jobID: "forget-1", userID: user, requestedAt: Date())
            try await harness.enqueue(forget, format: .json)
            let forgotten = try #require(
                try await harness.events.results(harness.topics.results, jobs: [forget.jobID]).first)
            guard case .success(let done) = forgotten.outcome else {
                Issue.record("expected success, got \(forgotten)")
                return
            }
            #expect(done.disposition == .forgotten)
            #expect(done.avatarVersion == 0 && done.avatarPath.isEmpty)
            try expectNothingLeft(harness, user)

            // The crop request redelivered after the forget: superseded, nothing published.
            try await harness.enqueue(crop)
            let results = try await harness.events.results(harness.topics.results, jobs: [crop.jobID], count: 2)
            guard case .success(let again) = try #require(results.last).outcome else {
                Issue.record("expected success, got \(results)")
                return
            }
            #expect(again.disposition == .superseded)
            try expectNothingLeft(harness, user)
        }
    }
}
