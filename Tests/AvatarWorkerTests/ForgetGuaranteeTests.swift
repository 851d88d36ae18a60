import CropGeometry
import CropProtocol
import Database
import Dispatch
import Foundation
import Messaging
import Synchronization
import TestEnvironment
import Testing

@testable import AvatarWorker
@testable import Storage

/// The forget guarantee off the happy path (docs/ARCHITECTURE.md §4, "Forgetting"), on SeaweedFS with SigV4, real
/// Postgres and the broker: after `forget` returns, no object, ledger row or profile value of the user exists, and
/// no message requested before the forget creates one again — jobs that fail after the forget, replays and
/// redeliveries after the tombstone's old retention, a PUT delayed past the forget, a publication that loses its
/// connection between its commit and its copies.
@Suite("Forget guarantee (integration)", .requires(.database, .kafka, .s3))
struct ForgetGuaranteeTests {
    /// The avatar store: SeaweedFS (the worker's, in the tests that run one).
    private func s3() throws -> any ObjectStore { try TestService.s3Settings().store() }

    private func publication(
        _ harness: WorkerHarness, _ store: any ObjectStore, seams: TestSeams? = nil
    ) -> UserPublication {
        UserPublication(
            client: harness.database, avatars: store, uploadRetry: .none, cacheControl: "no-cache",
            lockTimeout: .seconds(60), logger: harness.logger, testSeams: seams)
    }

    /// A forget; `clockSkew` 0 unless a test is about it, so a request stamped right after the forget is a later one.
    private func forgetting(
        _ harness: WorkerHarness, _ store: any ObjectStore, clockSkew: TimeInterval = 0
    ) -> UserForgetting {
        UserForgetting(publication: publication(harness, store), clockSkew: clockSkew)
    }

    /// The avatar of `sizes` (the first is the avatar) for a user, with bytes that tell the jobs apart.
    private func objects(_ user: UUID, _ tag: UInt8, sizes: [Int] = [512, 80]) -> [UserPublication.Object] {
        sizes.map { size in
            UserPublication.Object(
                publicKey: AvatarKeys.avatarKey(userID: user, size: size, format: .png),
                data: [tag, UInt8(truncatingIfNeeded: size)], contentType: "image/png")
        }
    }

    /// Runs job `job`'s publication of `objects(user, tag, sizes:)` requested at `at`.
    private func publish(
        _ harness: WorkerHarness, _ store: any ObjectStore, _ job: String, _ user: UUID, at: Date, tag: UInt8,
        sizes: [Int] = [512, 80], seams: TestSeams? = nil
    ) -> UserPublication.Run {
        publication(harness, store, seams: seams).run(
            jobID: job, userID: user, requestedAt: at, objects: objects(user, tag, sizes: sizes), blurHash: nil)
    }

    private func key(_ user: UUID, _ size: Int = 512) -> String {
        AvatarKeys.avatarKey(userID: user, size: size, format: .png)
    }

    private func ledgerRows(_ harness: WorkerHarness, _ user: UUID) throws -> Int64 {
        try harness.database.withConnection { connection in
            try connection.query("SELECT count(*) AS n FROM avatar_crop_jobs WHERE user_id = $1", [.uuid(user)])
                .rows.first?.int("n") ?? -1
        }
    }

    private func tombstones(_ harness: WorkerHarness, _ user: UUID) throws -> Int64 {
        try harness.database.withConnection { connection in
            try connection.query(
                "SELECT count(*) AS n FROM avatar_forgotten_users WHERE user_key = avatar_user_key($1)", [.uuid(user)]
            ).rows.first?.int("n") ?? -1
        }
    }

    /// Nothing of the user: no object under users/{uid}/ on SeaweedFS, no ledger row, no profile.
    private func expectNothingLeft(
        _ harness: WorkerHarness, _ store: any ObjectStore, _ user: UUID,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(try store.keys(withPrefix: AvatarKeys.userPrefix(user)) == [], sourceLocation: sourceLocation)
        #expect(try ledgerRows(harness, user) == 0, sourceLocation: sourceLocation)
        #expect(try harness.profile(user) == nil, sourceLocation: sourceLocation)
    }

    /// Waits for the result of `job` (and of the rest of `among`): SUPERSEDED, and nothing of `user` left.
    private func expectSupersededAndNothingLeft(
        _ harness: WorkerHarness, _ store: any ObjectStore, _ user: UUID, job: String, among: [String]? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let results = try await harness.events.results(harness.topics.results, jobs: among ?? [job])
        let outcome = try #require(results.first { $0.jobID == job }, sourceLocation: sourceLocation)
        guard case .success(let success) = outcome.outcome else {
            Issue.record("expected SUPERSEDED, got \(outcome)", sourceLocation: sourceLocation)
            return
        }
        #expect(success.disposition == .superseded, sourceLocation: sourceLocation)
        try await offPool { try expectNothingLeft(harness, store, user, sourceLocation: sourceLocation) }
        try await expectResultsErased(harness, user, sourceLocation: sourceLocation)
    }

    /// The user's records on the results topic, oldest first.
    private func results(_ harness: WorkerHarness, of user: UUID) -> [KafkaMessage] {
        harness.events.messages(on: harness.topics.results).filter { $0.key == ResultsErasure.key(user) }
    }

    /// Window 5: the newest record under the user's key on the compacted results topic is a null (whatever came
    /// before it, compaction keeps only that), within 30 s; `after` records of the user must be there first.
    private func expectResultsErased(
        _ harness: WorkerHarness, _ user: UUID, after: Int = 1, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        var mine = results(harness, of: user)
        while !(mine.count > after && mine.last?.valueIsNull == true) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            mine = results(harness, of: user)
        }
        #expect(mine.count > after, "a record after the user's \(after)", sourceLocation: sourceLocation)
        #expect(mine.last?.valueIsNull == true, "the newest is a null", sourceLocation: sourceLocation)
    }

    /// Ends the Postgres session holding `user`'s publication lock (a lost connection: the server releases the lock),
    /// from a connection of its own.
    private func dropLockHolder(_ harness: WorkerHarness, _ user: UUID) throws {
        let observer = try PostgresConnection.connect(
            WorkerTestSupport.database(try TestService.database.require(), schema: harness.schema),
            logger: harness.logger)
        let lock: [PostgresValue] = [.int(UserPublication.lockNamespace), .int(UserPublication.lockKey(user))]
        let ended = try observer.query(
            """
            SELECT count(pg_terminate_backend(pid)) AS n FROM pg_locks
             WHERE locktype = 'advisory' AND granted AND classid = $1::int4::oid AND objid = $2::int4::oid
            """, lock
        ).rows.first?.int("n")
        #expect(ended == 1, "one session held the user's lock")
        // The server releases the lock as the backend exits.
        while try observer.query(
            "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::int4::oid "
                + "AND objid = $2::int4::oid", lock
        ).rows.first?.int("n") != 0 {
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    @Test("the SQL functions take the user's lock under the key the worker's lock uses")
    func lockKeyMatches() async throws {
        try await withHarness { harness in
            try await offPool {
                for user in (0..<32).map({ _ in UUID() }) {
                    let key = try harness.database.withConnection { connection in
                        try connection.query("SELECT avatar_user_lock_key($1) AS k", [.uuid(user)]).rows.first?
                            .int("k")
                    }
                    #expect(key == UserPublication.lockKey(user), "\(user)")
                }
            }
        }
    }

    @Test("jobs that passed their checks and fail or start after their user's forget leave no row")
    func failuresAfterTheForget() async throws {
        try await withHarness { harness in
            let store = try s3()
            let user = UUID()
            let requestedAt = Date().addingTimeInterval(-5)
            let ledger = AvatarLedger(client: harness.database)
            try await offPool {
                // Job a started its render, job b only passed its precheck (it waits for a render slot).
                #expect(try ledger.precheck(jobID: "a", userID: user, requestedAt: requestedAt) == .proceed)
                #expect(try ledger.precheck(jobID: "b", userID: user, requestedAt: requestedAt) == .proceed)
                #expect(
                    try ledger.markStarted(jobID: "a", userID: user, requestedAt: requestedAt, maxCrashAttempts: 2)
                        == .render(attempt: 1))
                _ = try forgetting(harness, store).run(userID: user, requestedAt: Date())
                // a: its source was deleted with the account (SOURCE_NOT_FOUND).
                try ledger.recordFailure(
                    jobID: "a", userID: user, requestedAt: requestedAt, errorCode: "SOURCE_NOT_FOUND", attempts: 2,
                    firstFailedAt: Date())
                // b: its render starts after the forget: refused, and its failure (TOO_SMALL) writes nothing either.
                #expect(
                    try ledger.markStarted(jobID: "b", userID: user, requestedAt: requestedAt, maxCrashAttempts: 2)
                        == .notOwned)
                try ledger.recordFailure(
                    jobID: "b", userID: user, requestedAt: requestedAt, errorCode: "TOO_SMALL", attempts: 1,
                    firstFailedAt: Date())
                try expectNothingLeft(harness, store, user)
                #expect(try tombstones(harness, user) == 1)
                // A request made after the forget is recorded as any other.
                try ledger.recordFailure(
                    jobID: "c", userID: user, requestedAt: Date().addingTimeInterval(1), errorCode: "TOO_SMALL",
                    attempts: 1, firstFailedAt: Date())
                #expect(try ledgerRows(harness, user) == 1)
            }
        }
    }

    @Test(
        "window 2: a request stamped within the accepted skew after the forget, failed before it without a row, replayed after it publishes nothing"
    )
    func futureStampedRequestAfterTheForget() async throws {
        try await withHarness { harness in
            let store = try s3()
            let user = UUID()
            try await offPool {
                // The producer's clock runs 200 s ahead: its request was accepted (within the 300 s skew) and failed
                // before the database saw it (DATABASE_UNAVAILABLE: no ledger row). Then the user is forgotten, at the
                // database's now.
                let stamped = Date().addingTimeInterval(200)
                _ = try forgetting(harness, store, clockSkew: 300).run(userID: user, requestedAt: Date())
                // Its replay: superseded by the tombstone, which covers now + the skew, not the forget's own stamp.
                let replayed = try publish(harness, store, "future", user, at: stamped, tag: 1).get()
                #expect(replayed.disposition == .superseded(version: 0, path: nil))
                try expectNothingLeft(harness, store, user)
                #expect(
                    try AvatarLedger(client: harness.database).precheck(
                        jobID: "future", userID: user, requestedAt: stamped) == .superseded)
            }
        }
    }

    @Test("window 2, the worker: a forget request, then a crop stamped 200 s ahead (a replay) ends superseded")
    func workerSupersedesFutureStampedReplay() async throws {
        let s3 = try TestService.s3Settings()
        try await withHarness { harness in
            let store = try s3.store()
            try harness.startWorker(s3.overrides(sources: harness.storeRoot))
            let user = UUID()
            let forget = ValidatedCropRequest.forget(jobID: "forget-\(user)", userID: user, requestedAt: Date())
            try await harness.enqueue(forget)
            _ = try await harness.events.results(harness.topics.results, jobs: [forget.jobID])
            let future = WorkerHarness.request(
                user: user, source: try harness.upload("size/craft-beer_640x640.jpg"),
                requestedAt: Date().addingTimeInterval(200))
            try await harness.enqueue(future)
            try await expectSupersededAndNothingLeft(harness, store, user, job: future.jobID)
        }
    }

    @Test(
        "window 4: a forget whose deletes fail past its retries stays pending; the sweeper completes it once the store is back"
    )
    func failedForgetIsSweptUntilDone() async throws {
        try await withHarness { harness in
            let outage = Atomic<Bool>(false)
            let store = HookedStore(base: try s3(), deletesFail: { outage.load(ordering: .acquiring) })
            let user = UUID()
            let forgetting = forgetting(harness, store)
            let sweeper = ForgetSweeper(forgetting: forgetting, logger: harness.logger)
            try await offPool {
                _ = try publish(harness, store, "v1", user, at: Date() - 60, tag: 1).get()
                outage.store(true, ordering: .releasing)
                #expect(throws: (any Error).self) { try forgetting.run(userID: user, requestedAt: Date()) }
                #expect(try forgetting.pending.isPending(userID: user))
                #expect(try tombstones(harness, user) == 1, "the tombstone is written before the deletes")
                #expect(try !store.keys(withPrefix: AvatarKeys.userPrefix(user)).isEmpty, "the objects stayed")
                #expect(try forgetting.pending.backlog().count == 1)
                // Not due yet: the run that recorded it might still be going.
                #expect(try sweeper.sweep() == 0)
                try makeDue(harness)
                #expect(try sweeper.sweep() == 0, "still failing: it stays pending")
                #expect(try forgetting.pending.isPending(userID: user))
                outage.store(false, ordering: .releasing)
                try makeDue(harness)
                #expect(try sweeper.sweep() == 1)
                try expectNothingLeft(harness, store, user)
                #expect(try forgetting.pending.backlog() == PendingForgets.Backlog(count: 0, oldest: .zero))
                // Its last look for late writes stays until its time comes.
                try makeDue(harness)
                #expect(try sweeper.sweep() == 1)
                #expect(try !forgetting.pending.isPending(userID: user))
            }
        }
    }

    /// Makes every pending forget due now, as if its retry time had passed.
    private func makeDue(_ harness: WorkerHarness) throws {
        try harness.database.withConnection { connection in
            try connection.query("UPDATE avatar_pending_forgets SET due_at = now()")
        }
    }

    @Test(
        "window 1: on a versioned bucket a publication leaves only current objects, and a forget no version or delete marker"
    )
    func forgetOnAVersionedBucket() async throws {
        var settings = try TestService.s3Settings()
        settings.bucket = "versioned-\(UUID().uuidString.lowercased().prefix(18))"
        let store = try #require(try settings.store() as? S3Store)
        try store.createBucket()
        try store.setVersioning(enabled: true)
        try await withHarness { harness in
            let user = UUID()
            let prefix = AvatarKeys.userPrefix(user)
            try await offPool {
                // v2 replaces v1's public keys and deletes its versioned objects and its 80 px rendition.
                _ = try publish(harness, store, "v1", user, at: Date() - 60, tag: 1).get()
                _ = try publish(harness, store, "v2", user, at: Date() - 50, tag: 2, sizes: [512]).get()
                let versions = try store.versions(withPrefix: prefix)
                #expect(versions.allSatisfy { $0.isLatest && !$0.isDeleteMarker }, "\(versions)")
                #expect(Set(versions.map(\.key)) == Set(try store.keys(withPrefix: prefix)))
                _ = try forgetting(harness, store).run(userID: user, requestedAt: Date())
                try expectNothingLeft(harness, store, user)
                #expect(try store.versions(withPrefix: prefix) == [], "no version, no delete marker")
            }
        }
    }

    @Test(
        "window 3: a PUT held up after its fence until the forget returned lands; the forget's last look deletes it"
    )
    func putHeldPastTheForgetIsDeletedByTheLastLook() async throws {
        try await withHarness { harness in
            let held = HeldPut()
            let store = HookedStore(
                base: try s3(), writeDeadline: .seconds(1), beforePut: { _ in held.holdFirst() },
                afterPut: { _ in held.landed.store(true, ordering: .releasing) })
            let user = UUID()
            let publishing = publication(harness, store)
            let forgetting = forgetting(harness, store)
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                _ = publishing.run(
                    jobID: "held", userID: user, requestedAt: Date().addingTimeInterval(-5), objects: objects(user, 1),
                    blurHash: nil)
                done.signal()
            }
            try await offPool {
                // The job's first PUT passed its fence and is held (a paused VM) while its connection drops and the
                // forget runs to its end: the forget's own looks find nothing.
                held.started.wait()
                try dropLockHolder(harness, user)
                _ = try forgetting.run(userID: user, requestedAt: Date())
                #expect(try store.keys(withPrefix: AvatarKeys.userPrefix(user)) == [])
                #expect(try forgetting.pending.isPending(userID: user), "the last look is still to come")
                held.release.signal()
                done.wait()
                let landed = held.landed.load(ordering: .acquiring)
                #expect(landed, "the held PUT landed after the forget returned")
                #expect(try store.keys(withPrefix: AvatarKeys.userPrefix(user)).count == 1)
                // The last look, once its time has come (the store's late-write horizon after the forget).
                let sweeper = ForgetSweeper(forgetting: forgetting, logger: harness.logger)
                #expect(try sweeper.sweep() == 0, "not before its time")
                try makeDue(harness)
                #expect(try sweeper.sweep() == 1)
                try expectNothingLeft(harness, store, user)
                #expect(try !forgetting.pending.isPending(userID: user))
            }
        }
    }

    @Test(
        "window 5: a forget request writes a null value for the user's key after its result, on the compacted results topic"
    )
    func forgetWritesAResultsTombstone() async throws {
        let s3 = try TestService.s3Settings()
        try await withHarness { harness in
            try harness.startWorker(s3.overrides(sources: harness.storeRoot))
            let user = UUID()
            let forget = ValidatedCropRequest.forget(jobID: "forget-\(user)", userID: user, requestedAt: Date())
            try await harness.enqueue(forget)
            _ = try await harness.events.results(harness.topics.results, jobs: [forget.jobID])
            let key = Array(user.uuidString.lowercased().utf8)
            var mine = harness.events.messages(on: harness.topics.results).filter { $0.key == key }
            let deadline = ContinuousClock.now + .seconds(30)
            while mine.count < 2 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                mine = harness.events.messages(on: harness.topics.results).filter { $0.key == key }
            }
            #expect(mine.map(\.valueIsNull) == [false, true], "the FORGOTTEN result, then the tombstone")
            #expect(mine.map(\.partition).allSatisfy { $0 == mine.first?.partition })
        }
    }

    @Test(
        "window 5: a forget outside a forget request (the CLI, a pending forget a worker completes) writes the results topic's null record when it returns, and its last look writes it again after a later result"
    )
    func forgetOutsideARequestErasesTheResults() async throws {
        try await withHarness { harness in
            let user = UUID()
            let erasure = ResultsErasure(producer: harness.producer, topic: harness.topics.results)
            let forgetting = UserForgetting(
                publication: publication(harness, try s3()), clockSkew: 0, results: erasure)
            let sweeper = ForgetSweeper(forgetting: forgetting, logger: harness.logger)
            let result = KafkaRecord(
                topic: harness.topics.results, key: ResultsErasure.key(user), value: Array("a result".utf8))
            // An earlier result of the user, then the forget.
            _ = try await harness.producer.send(result)
            let erased = try await offPool { try forgetting.run(userID: user, requestedAt: Date()) }
            #expect(erased.resultsNotErased == nil)
            try await expectResultsErased(harness, user, after: 1)
            // A result published after the forget's null (a redelivered request that failed while the database
            // could not say it was covered): the last look, once due, erases it too.
            _ = try await harness.producer.send(result)
            let deadline = ContinuousClock.now + .seconds(30)
            while results(harness, of: user).count < 3 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(results(harness, of: user).count == 3, "the later result arrived")
            #expect(results(harness, of: user).last?.valueIsNull == false)
            try await offPool {
                try makeDue(harness)
                #expect(try sweeper.sweep() == 1)
                #expect(try !forgetting.pending.isPending(userID: user))
            }
            try await expectResultsErased(harness, user, after: 3)
        }
    }

    @Test("window 5: replay refuses the DLQ records of users forgotten after their request, and only those")
    func replayRefusesForgottenUsers() async throws {
        try await withHarness { harness in
            let forgotten = UUID().uuidString.lowercased()
            let kept = UUID().uuidString.lowercased()
            let records = [ReplayPlanTests.dlq(user: forgotten, offset: 0), ReplayPlanTests.dlq(user: kept, offset: 1)]
            try await offPool {
                _ = try forgetting(harness, try s3()).run(
                    userID: try #require(UUID(uuidString: forgotten)), requestedAt: Date())
                var plan = ReplayPlan(records: records, filter: ReplayFilter(), maxReplays: 3)
                #expect(plan.toReplay.count == 2)
                try plan.refuse(where: ForgottenUsers(client: harness.database).cover)
                #expect(plan.toReplay.map(\.userID) == [kept])
                #expect(plan.refused.map(\.record.userID) == [forgotten])
                #expect(plan.refused.map(\.reason) == [.userForgotten])
            }
        }
    }

    @Test("the worker: a job waiting for a busy render slot when its user is forgotten ends superseded, no row")
    func forgetRacesAJobBehindABusySlot() async throws {
        let s3 = try TestService.s3Settings()
        try await withHarness { harness in
            let store = try s3.store()
            try harness.startWorker(
                s3.overrides(sources: harness.storeRoot) + ["worker.render-slots=1", "worker.jobs-in-flight=2"],
                testSeams: SourceMarkerSeams())
            let user = UUID()
            // Another user's job holds the only render slot for 12 s (4 s was once not enough on a loaded machine to
            // enqueue the next job and look at it); the user's too-small photo waits behind it.
            let busy = WorkerHarness.request(
                source: try harness.upload("orientation/Landscape_1.jpg", trailer: "AVATAR-TEST-SLEEP-MS=12000"))
            let small = WorkerHarness.request(
                user: user, source: try harness.upload("size/craft-beer_319x320.jpg"),
                requestedAt: Date().addingTimeInterval(-1))
            try await harness.enqueue(busy)
            try await waitForStatus(harness, busy.jobID, "started")
            try await harness.enqueue(small)
            try await Task.sleep(for: .seconds(1))
            #expect(try harness.ledgerStatus(jobID: small.jobID) == nil, "the job waits for the slot")
            _ = try await offPool { try forgetting(harness, store).run(userID: user, requestedAt: Date()) }
            try await expectSupersededAndNothingLeft(
                harness, store, user, job: small.jobID, among: [busy.jobID, small.jobID])
        }
    }

    @Test(
        "forget, tombstones and rows aged past every retention and pruned: a redelivery and a DLQ replay of the user's pre-forget requests publish nothing"
    )
    func replayAndRedeliveryAfterRetention() async throws {
        let s3 = try TestService.s3Settings()
        try await withHarness { harness in
            let store = try s3.store()
            let user = UUID()
            let source = try harness.upload("size/craft-beer_640x640.jpg")
            // A request that fails while the avatar store is down: to the DLQ (transient, replayable).
            try harness.startWorker([
                "storage.sources-url=\(harness.storeRoot.absoluteString)",
                "storage.url=s3://avatars?endpoint=http://127.0.0.1:9&region=us-east-1",
                "storage.s3.access-key-id=test", "storage.s3.secret-access-key=test",
            ])
            let failing = WorkerHarness.request(user: user, source: source, requestedAt: Date().addingTimeInterval(-20))
            try await harness.enqueue(failing)
            _ = try await harness.events.results(harness.topics.results, jobs: [failing.jobID])
            _ = try await harness.events.waitFor(harness.topics.dlq, count: 1)
            await harness.stopWorkers()

            // A request that publishes, on SeaweedFS.
            try harness.startWorker(s3.overrides(sources: harness.storeRoot))
            let applied = WorkerHarness.request(user: user, source: source, requestedAt: Date().addingTimeInterval(-10))
            try await harness.enqueue(applied)
            let first = try #require(
                try await harness.events.results(harness.topics.results, jobs: [applied.jobID]).first)
            guard case .success(let published) = first.outcome, published.disposition == .applied else {
                Issue.record("expected APPLIED, got \(first)")
                return
            }

            // The forget, then everything aged 30 days and pruned with a one-hour retention (under the rules before
            // migration 0009 the tombstone went with the rows).
            let forget = ValidatedCropRequest.forget(jobID: "forget-\(user)", userID: user, requestedAt: Date())
            try await harness.enqueue(forget)
            _ = try await harness.events.results(harness.topics.results, jobs: [forget.jobID])
            try await offPool {
                try expectNothingLeft(harness, store, user)
                try harness.database.withConnection { connection in
                    try connection.query(
                        """
                        UPDATE avatar_crop_jobs SET finished_at = finished_at - interval '30 days',
                               started_at = started_at - interval '30 days'
                        """)
                    try connection.query(
                        "UPDATE avatar_forgotten_users SET recorded_at = recorded_at - interval '30 days'")
                }
                _ = try LedgerRetention(client: harness.database, retention: .seconds(3600), batchSize: 100).prune()
                #expect(try tombstones(harness, user) == 1, "the tombstone outlives every message that can come back")
            }

            // A byte-for-byte redelivery of the applied request, and a replay of the failed one from the DLQ.
            try await harness.enqueue(applied)
            let replayer = try DLQReplayer(
                settings: try DLQReplayer.Settings(values: harness.values()), logger: harness.logger)
            let outcome = try await replayer.replay(try await replayer.plan(ReplayFilter()))
            #expect(outcome.replayed.compactMap(\.jobID) == [failing.jobID])
            let redelivered = try await harness.events.results(
                harness.topics.results, jobs: [applied.jobID, failing.jobID], count: 2)
            for job in [applied.jobID, failing.jobID] {
                let last = try #require(redelivered.last { $0.jobID == job })
                guard case .success(let success) = last.outcome else {
                    Issue.record("expected SUPERSEDED for \(job), got \(last)")
                    continue
                }
                #expect(success.disposition == .superseded)
            }
            try await offPool { try expectNothingLeft(harness, store, user) }
        }
    }

    @Test("a versioned PUT delayed past the forget (its worker lost the lock): the forget's last look deletes it")
    func putDelayedPastTheForget() async throws {
        try await withHarness { harness in
            let delayed = DelayedPuts(try s3())
            let store = delayed.store
            let user = UUID()
            let publishing = publication(harness, store)
            let forgetting = forgetting(harness, store)
            let run = Mutex<UserPublication.Run?>(nil)
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                let result = publishing.run(
                    jobID: "late", userID: user, requestedAt: Date().addingTimeInterval(-5),
                    objects: objects(user, 1), blurHash: nil)
                run.withLock { $0 = result }
                done.signal()
            }
            try await offPool {
                // The job's PUT is on its way (held in the network) when its connection drops and the forget runs;
                // it lands once the forget has listed the user's prefix.
                delayed.putStarted.wait()
                try dropLockHolder(harness, user)
                let erased = try forgetting.run(userID: user, requestedAt: Date())
                done.wait()
                let landed = delayed.landedAfterListing.load(ordering: .acquiring)
                #expect(landed, "the PUT landed after the first listing")
                #expect(erased.objects == 1, "the late object, deleted by the forget's last look")
                guard case .failure = try #require(run.withLock { $0 }).result else {
                    Issue.record("the job that lost its lock published")
                    return
                }
                try expectNothingLeft(harness, store, user)
                // The job's retry (or redelivery): superseded by the tombstone, nothing written.
                let again = try publish(harness, store, "late", user, at: Date() - 5, tag: 1).get()
                #expect(again.disposition == .superseded(version: 0, path: nil))
                try expectNothingLeft(harness, store, user)
            }
        }
    }

    /// Publishes v1 (with an 80 px rendition), then v2 (without), whose connection drops right after its commit;
    /// `meanwhile` runs then, before v2 goes on to its copies and deletions. Whether v2 stopped there, as it must.
    private func publishV2LosingItsConnection(
        _ harness: WorkerHarness, _ store: any ObjectStore, _ user: UUID, at start: Date,
        meanwhile: @escaping @Sendable () -> Void = {}
    ) throws -> Bool {
        _ = try publish(harness, store, "v1", user, at: start, tag: 1).get()
        let lost = publish(
            harness, store, "v2", user, at: start + 1, tag: 2, sizes: [512],
            seams: TestSeams(afterCommit: { _ in
                try? dropLockHolder(harness, user)
                meanwhile()
            }))
        guard case .failure = lost.result else {
            Issue.record("the publication went on without its connection")
            return false
        }
        return true
    }

    @Test("a publication killed between its commit and the stale keys' delete: its redelivery deletes them")
    func killBetweenCommitAndStaleDelete() async throws {
        try await withHarness { harness in
            let store = try s3()
            let user = UUID()
            let start = Date().addingTimeInterval(-60)
            try await offPool {
                // Version 2 has no rendition, so its publication must delete version 1's: it is killed before.
                guard try publishV2LosingItsConnection(harness, store, user, at: start) else { return }
                #expect(try harness.profile(user)?.version == 2, "the commit happened")
                #expect(try store.exists(key(user, 80)), "version 1's rendition is still public")
                // The redelivery of v2: a duplicate, whose repair copies version 2 and deletes the rest.
                let redelivered = try publish(harness, store, "v2", user, at: start + 1, tag: 2, sizes: [512]).get()
                #expect(redelivered.disposition == .duplicate(version: 2, path: key(user)))
                #expect(try !store.exists(key(user, 80)), "the stale rendition is gone")
                let left = Set(try store.keys(withPrefix: AvatarKeys.userPrefix(user)))
                #expect(left == [key(user), UserPublication.versionedKey(key(user), version: 2, jobID: "v2")])
                try expectPublicBytesMatchLedger(harness, user, store: store)
            }
        }
    }

    @Test(
        "a publication whose connection drops before its copies: the next version's keys are neither overwritten nor deleted"
    )
    func connectionDroppedBeforeCopies() async throws {
        try await withHarness { harness in
            let store = try s3()
            let user = UUID()
            let start = Date().addingTimeInterval(-60)
            try await offPool {
                // Job A commits version 2 (no rendition), loses its connection, and job B publishes version 3 (with
                // a rendition) before A goes on to its copy of version 2 and its delete of the rendition.
                let stopped = try publishV2LosingItsConnection(harness, store, user, at: start) {
                    let published = try? publish(harness, store, "v3", user, at: start + 2, tag: 3).get()
                    #expect(published?.disposition == .applied(version: 3, path: key(user)))
                }
                guard stopped else { return }
                #expect(try harness.profile(user)?.version == 3)
                #expect(try store.get(key(user)).data == [3, 0], "version 3's avatar, not version 2's copy")
                #expect(try store.get(key(user, 80)).data == [3, 80], "version 3's rendition, not deleted")
                try expectPublicBytesMatchLedger(harness, user, store: store)
                // A's retry: a duplicate of a version no longer current; the public keys stay version 3's.
                let retried = try publish(harness, store, "v2", user, at: start + 1, tag: 2, sizes: [512]).get()
                #expect(retried.disposition == .duplicate(version: 2, path: key(user)))
                #expect(try store.get(key(user)).data == [3, 0])
                #expect(try store.get(key(user, 80)).data == [3, 80])
            }
        }
    }

    @Test("two jobs with the same requested_at: one publishes, and neither bumps again once every row is pruned")
    func equalRequestedAtNeverBumpsTwice() async throws {
        try await withHarness { harness in
            let store = try s3()
            let user = UUID()
            let at = Date().addingTimeInterval(-60)
            try await offPool {
                var dispositions: [JobDisposition] = []
                for (job, tag) in [("job-b", UInt8(1)), ("job-a", 2), ("job-c", 3)] {
                    dispositions.append(try publish(harness, store, job, user, at: at, tag: tag).get().disposition)
                }
                // Ordered by job id at the same requested_at: a is before b (superseded), c after (applied).
                #expect(
                    dispositions == [
                        .applied(version: 1, path: key(user)), .superseded(version: 1, path: key(user)),
                        .applied(version: 2, path: key(user)),
                    ])
                _ = try LedgerRetention(client: harness.database, retention: .zero, batchSize: 100).prune()
                #expect(try ledgerRows(harness, user) == 1, "only the current version's row is kept")
                for job in ["job-a", "job-b", "job-c"] {
                    let again = try publish(harness, store, job, user, at: at, tag: 9).get()
                    if case .applied = again.disposition { Issue.record("\(job) bumped again") }
                }
                #expect(try harness.profile(user)?.version == 2)
                try expectPublicBytesMatchLedger(harness, user, store: store)
            }
        }
    }

    private func waitForStatus(_ harness: WorkerHarness, _ jobID: String, _ status: String) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if try harness.ledgerStatus(jobID: jobID) == status { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("job \(jobID) never reached \(status)")
    }
}

/// SeaweedFS whose versioned PUTs wait, as if slow on the network, until the forget has listed the user's prefix,
/// then land; its write deadline is short (the forget's last look comes that long after its first).
private final class DelayedPuts: Sendable {
    let putStarted = DispatchSemaphore(value: 0)
    private let listed = DispatchSemaphore(value: 0)
    let landedAfterListing = Atomic<Bool>(false)
    private let base: any ObjectStore

    init(_ base: any ObjectStore) { self.base = base }

    var store: HookedStore {
        HookedStore(
            base: base, writeDeadline: .seconds(2),
            beforePut: { _ in
                self.putStarted.signal()
                self.listed.wait()
            },
            afterPut: { _ in self.landedAfterListing.store(true, ordering: .releasing) },
            afterListing: { _ in self.listed.signal() })
    }
}

/// The first PUT waits, after its fence, until released; the others go through.
private final class HeldPut: Sendable {
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let landed = Atomic<Bool>(false)
    private let first = Atomic<Bool>(true)

    func holdFirst() {
        guard first.exchange(false, ordering: .acquiringAndReleasing) else { return }
        started.signal()
        release.wait()
    }
}
