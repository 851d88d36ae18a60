import CropProtocol
import Database
import Dispatch
import Foundation
import Logging
import Storage
import Synchronization
import TestEnvironment
import Testing

@testable import AvatarWorker

/// The ledger and the user's publication on real Postgres: the exactly-once effect does not depend on the
/// scheduler, and the bytes at the public key are the bytes of the version the database names.
@Suite("Avatar ledger (integration)", .requires(.database, .kafka))
struct AvatarLedgerTests {
    private func publication(_ harness: WorkerHarness) -> UserPublication {
        UserPublication(
            client: harness.database, avatars: harness.store, uploadRetry: .none, cacheControl: "no-cache",
            lockTimeout: .seconds(10), logger: harness.logger)
    }

    private func object(_ user: UUID, _ bytes: [UInt8]) -> UserPublication.Object {
        UserPublication.Object(
            publicKey: AvatarKeys.avatarKey(userID: user, size: 512, format: .png), data: bytes,
            contentType: "image/png")
    }

    @Test("two workers publishing the same job at once bump the version once; the bytes match the ledger")
    func concurrentDuplicate() async throws {
        try await withHarness { harness in
            let publication = publication(harness)
            for round in 0..<5 {
                let user = UUID()
                let job = UUID().uuidString
                let requestedAt = Date()
                let outcomes = Mutex<[JobDisposition]>([])
                let errors = Mutex<[String]>([])
                DispatchQueue.concurrentPerform(iterations: 2) { index in
                    do {
                        let bytes = Array("render \(round) by worker \(index)".utf8)
                        let outcome = try publication.run(
                            jobID: job, userID: user, requestedAt: requestedAt, objects: [object(user, bytes)],
                            blurHash: nil
                        ).get().disposition
                        outcomes.withLock { $0.append(outcome) }
                    } catch {
                        errors.withLock { $0.append("\(error)") }
                    }
                }
                #expect(errors.withLock { $0 }.isEmpty)
                let all = outcomes.withLock { $0 }
                #expect(all.contains { if case .applied(1, _) = $0 { true } else { false } })
                #expect(all.contains { if case .duplicate(1, _) = $0 { true } else { false } })
                #expect(try harness.profile(user)?.version == 1)
                try expectPublicBytesMatchLedger(harness, user)
            }
        }
    }

    @Test("an older request never overwrites a newer one; the superseded outcome names the current avatar")
    func ordering() async throws {
        try await withHarness { harness in
            let publication = publication(harness)
            let ledger = AvatarLedger(client: harness.database)
            let user = UUID()
            let now = Date()
            let key = AvatarKeys.avatarKey(userID: user, size: 512, format: .png)
            let newer = try publication.run(
                jobID: "new", userID: user, requestedAt: now, objects: [object(user, [1, 2, 3])], blurHash: "LKO2"
            ).get()
            #expect(newer.disposition == .applied(version: 1, path: key))
            let older = try publication.run(
                jobID: "old", userID: user, requestedAt: now.addingTimeInterval(-5),
                objects: [object(user, [9, 9, 9])], blurHash: nil
            ).get()
            #expect(older.disposition == .superseded(version: 1, path: key))
            let prechecks = try [
                ledger.precheck(jobID: "old", userID: user, requestedAt: now.addingTimeInterval(-5)),
                ledger.precheck(jobID: "new", userID: user, requestedAt: now),
                ledger.precheck(jobID: "next", userID: user, requestedAt: now),
                ledger.precheck(jobID: "new", userID: UUID(), requestedAt: now),
            ]
            #expect(prechecks == [.superseded, .duplicate(version: 1, path: key), .proceed, .foreignJobID])
            #expect(try harness.store.get(key).data == [1, 2, 3], "the superseded job uploaded nothing")
            #expect(try harness.ledgerCount(status: "superseded") == 1)
            try expectPublicBytesMatchLedger(harness, user)
        }
    }

    @Test("a job id reused by another user is refused, and that user's avatar is untouched")
    func foreignJobID() async throws {
        try await withHarness { harness in
            let publication = publication(harness)
            let first = UUID()
            let second = UUID()
            _ = try publication.run(
                jobID: "shared", userID: first, requestedAt: Date(), objects: [object(first, [1])], blurHash: nil
            ).get()
            let reused = publication.run(
                jobID: "shared", userID: second, requestedAt: Date(), objects: [object(second, [2])], blurHash: nil)
            guard case .failure(let error) = reused.result else {
                Issue.record("a foreign job id must be refused")
                return
            }
            #expect((error as? JobFailure)?.code == .invalidRequest)
            #expect(try harness.profile(second) == nil)
            #expect(
                try !harness.store.exists(AvatarKeys.avatarKey(userID: second, size: 512, format: .png)),
                "the refused job uploads nothing")
        }
    }

    @Test("a public key that lost its bytes is repaired by the next duplicate from the versioned object")
    func repairOnDuplicate() async throws {
        try await withHarness { harness in
            let publication = publication(harness)
            let user = UUID()
            let requestedAt = Date()
            _ = try publication.run(
                jobID: "j1", userID: user, requestedAt: requestedAt, objects: [object(user, [7, 7])], blurHash: nil
            ).get()
            let key = AvatarKeys.avatarKey(userID: user, size: 512, format: .png)
            // As if the worker died between the commit and the copy: the public key still holds old bytes.
            try harness.store.put(key, data: [0], options: PutOptions(contentType: "image/png"))
            let again = try publication.run(
                jobID: "j1", userID: user, requestedAt: requestedAt, objects: nil, blurHash: nil
            ).get()
            #expect(again.disposition == .duplicate(version: 1, path: key))
            #expect(try harness.store.get(key).data == [7, 7])
            try expectPublicBytesMatchLedger(harness, user)
        }
    }

    @Test("a publication that finds the version moved or the job id taken writes nothing at all")
    func applyIsAtomic() async throws {
        try await withHarness { harness in
            let user = UUID()
            let key = AvatarKeys.avatarKey(userID: user, size: 512, format: .png)
            let now = Date()
            func apply(_ job: String, expected: Int64) throws -> Int64 {
                try harness.database.withConnection { connection in
                    try AvatarLedger.apply(
                        connection, jobID: job, userID: user, requestedAt: now, expected: expected, path: key,
                        renditionPaths: [], sha256: "00", blurHash: nil)
                }
            }
            #expect(throws: AvatarLedger.VersionMoved.self) { try apply("a", expected: 3) }
            #expect(try harness.ledgerStatus(jobID: "a") == nil)
            #expect(try harness.profile(user)?.version ?? 0 == 0)

            #expect(try apply("a", expected: 0) == 1)
            // Job "b" is already in the ledger for another user: the bump made before that is found is undone.
            _ = try AvatarLedger(client: harness.database).markStarted(
                jobID: "b", userID: UUID(), requestedAt: now, maxCrashAttempts: 2)
            #expect(throws: AvatarLedger.Duplicate.self) { try apply("b", expected: 1) }
            #expect(try harness.profile(user)?.version == 1)
            // And a job that already succeeded is not recorded twice.
            #expect(throws: AvatarLedger.Duplicate.self) { try apply("a", expected: 1) }
            #expect(try harness.profile(user)?.version == 1)
        }
    }

    @Test("the user's lock waits at most its own timeout and leaves the session's lock_timeout as it was")
    func userLockTimeout() async throws {
        try await withHarness { harness in
            let user = UUID()
            let holder = try PostgresConnection.connect(
                WorkerTestSupport.database(try TestService.database.require(), schema: harness.schema),
                logger: harness.logger)
            try holder.query(
                "SELECT pg_advisory_lock($1::int4, $2::int4)",
                [.int(UserPublication.lockNamespace), .int(UserPublication.lockKey(user))])
            let impatient = UserPublication(
                client: harness.database, avatars: harness.store, uploadRetry: .none, cacheControl: "no-cache",
                lockTimeout: .seconds(1), logger: harness.logger)
            let started = ContinuousClock.now
            do {
                _ = try impatient.run(
                    jobID: "waits", userID: user, requestedAt: Date(), objects: [object(user, [1])], blurHash: nil
                ).get()
                Issue.record("published while another session held the user's lock")
            } catch let failure as JobFailure {
                #expect(failure.code == .databaseUnavailable)
                #expect(failure.detail.contains("not free within 1000 ms"))
            }
            #expect(ContinuousClock.now - started < .seconds(10))
            #expect(try harness.profile(user) == nil)

            // The lock call's lock_timeout is its own: the session keeps its configured one.
            try harness.database.withConnection { connection in
                try connection.query("SET lock_timeout = '4321ms'")
                try connection.query(
                    "SELECT avatar_lock_user($1::int4, $2::int4, $3::int4)",
                    [.int(UserPublication.lockNamespace), .int(1), .int(1000)])
                let setting = try connection.query("SELECT current_setting('lock_timeout') AS t").rows.first
                #expect(try setting?.text("t") == "4321ms")
                try connection.query("SELECT pg_advisory_unlock_all()")
                try connection.query("RESET lock_timeout")
            }
        }
    }

    @Test("renders that die with their worker are counted; past the limit the job is not rendered again")
    func crashCounting() async throws {
        try await withHarness { harness in
            let ledger = AvatarLedger(client: harness.database)
            let user = UUID()
            let now = Date()
            var starts: [AvatarLedger.Start] = []
            for _ in 0..<3 {
                starts.append(try ledger.markStarted(jobID: "p", userID: user, requestedAt: now, maxCrashAttempts: 2))
            }
            #expect(starts == [.render(attempt: 1), .render(attempt: 2), .crashLooped(attempts: 2)])
            // An attempt that reports back (here: a failure) resets the count.
            try ledger.recordFailure(
                jobID: "p", userID: user, requestedAt: now, errorCode: "PROCESSING_FAILED", attempts: 2,
                firstFailedAt: now)
            #expect(
                try ledger.markStarted(jobID: "p", userID: user, requestedAt: now, maxCrashAttempts: 2)
                    == .render(attempt: 1))
            #expect(
                try ledger.markStarted(jobID: "p", userID: UUID(), requestedAt: now, maxCrashAttempts: 2)
                    == .notOwned)
        }
    }
}

/// The chaos checker's rule: sha256(public object) == avatar_sha256 of the ledger row of the profile's version.
func expectPublicBytesMatchLedger(
    _ harness: WorkerHarness, _ user: UUID, store: (any ObjectStore)? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let row = try harness.database.withConnection { connection in
        try connection.query(
            """
            SELECT j.avatar_sha256, p.avatar_path FROM profiles p
              JOIN avatar_crop_jobs j ON j.user_id = p.id AND j.avatar_version = p.avatar_version
                                     AND j.status = 'succeeded'
             WHERE p.id = $1
            """, [.uuid(user)]
        ).rows.first
    }
    let expected = try #require(try row?.text("avatar_sha256"), sourceLocation: sourceLocation)
    let path = try #require(try row?.text("avatar_path"), sourceLocation: sourceLocation)
    let bytes = try (store ?? harness.store).get(path).data
    #expect(
        ObjectDigest.sha256Hex(bytes) == expected, "public bytes ≠ the DB's version", sourceLocation: sourceLocation)
}
