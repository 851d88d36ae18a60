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

/// docs/ARCHITECTURE.md §7, on real Postgres and a real object store.
@Suite("Publication hardening (integration)", .requires(.database, .kafka))
struct PublicationHardeningTests {
    private static let source = "size/craft-beer_640x640.jpg"

    private func firstResult(_ harness: WorkerHarness, _ jobID: String) async throws -> Avatar_Crop_V1_CropResult {
        try #require(try await harness.events.results(harness.topics.results, jobs: [jobID]).first)
    }

    /// Finding 3: only version N-1's versioned objects used to be removed; its public keys that N did
    /// not rewrite (an extra size, the other format) stayed public forever.
    @Test("after version N the public keys are exactly N's: an older extra size and the older format are removed")
    func stalePublicKeys() async throws {
        try await withHarness { harness in
            try harness.startWorker()
            let user = UUID()
            let prefix = AvatarKeys.userPrefix(user)
            var first = WorkerHarness.request(
                user: user, source: try harness.upload(Self.source), requestedAt: Date() - 10)
            first.extraSizes = [128]
            try await harness.enqueue(first)
            guard case .success = try await firstResult(harness, first.jobID).outcome else {
                Issue.record("the first request was not published")
                return
            }
            #expect(try harness.store.exists(prefix + "avatar_512.png"))
            #expect(try harness.store.exists(prefix + "avatar_128.png"))

            var second = WorkerHarness.request(user: user, source: try harness.upload(Self.source))
            second.formats = [.jpeg]
            try await harness.enqueue(second)
            guard case .success(let success) = try await firstResult(harness, second.jobID).outcome else {
                Issue.record("the second request was not published")
                return
            }
            #expect(success.avatarVersion == 2)
            #expect(try harness.store.exists(prefix + "avatar_512.jpg"))
            #expect(try !harness.store.exists(prefix + "avatar_512.png"), "the replaced PNG avatar is still public")
            #expect(try !harness.store.exists(prefix + "avatar_128.png"), "the replaced extra size is still public")
            try expectPublicBytesMatchLedger(harness, user)
        }
    }

    /// Finding 4: the user's lock is a session advisory lock. Worker A's connection drops while its
    /// versioned upload is in flight, so Postgres frees the lock; worker B takes it at the same
    /// version N, and A's upload lands after B's, before B's copy. B must still publish its own
    /// bytes: the public key's SHA-256 is the one the ledger records for N.
    @Test("A's connection cut in its upload window: B publishes N with its own bytes, whatever A's upload does")
    func connectionCutInUploadWindow() async throws {
        try await withHarness { harness in
            let user = UUID()
            let key = AvatarKeys.avatarKey(userID: user, size: 512, format: .png)
            let gate = UploadGate()
            let clientA = try PostgresClient(
                configuration: WorkerTestSupport.database(try TestService.database.require(), schema: harness.schema),
                maxConnections: 1, logger: harness.logger)
            defer { clientA.shutdown() }
            let workerA = UserPublication(
                client: clientA, avatars: gate.gating(harness.store), uploadRetry: .none,
                cacheControl: "no-cache", lockTimeout: .seconds(10), logger: harness.logger)
            // B, between its own versioned upload and its commit, lets A's delayed upload land.
            let workerB = UserPublication(
                client: harness.database, avatars: harness.store, uploadRetry: .none, cacheControl: "no-cache",
                lockTimeout: .seconds(30), logger: harness.logger,
                testSeams: TestSeams(beforeCommit: { _ in
                    gate.release.signal()
                    gate.landed.wait()
                }))
            let bytesA = Array("the render of worker A".utf8)
            let bytesB = Array("the render of worker B".utf8)
            let objectA = UserPublication.Object(publicKey: key, data: bytesA, contentType: "image/png")
            let objectB = UserPublication.Object(publicKey: key, data: bytesB, contentType: "image/png")

            let resultA = Mutex<String?>(nil)
            let doneA = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                do {
                    _ = try workerA.run(
                        jobID: "job-a", userID: user, requestedAt: Date() - 5, objects: [objectA], blurHash: nil
                    ).get()
                    resultA.withLock { $0 = "published" }
                } catch {
                    resultA.withLock { $0 = "\(error)" }
                }
                doneA.signal()
            }
            // A holds the lock and its upload is in flight: cut A's connection (the one holding the lock).
            gate.entered.wait()
            let pid = try harness.database.withConnection { connection in
                try connection.query(
                    """
                    SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
                       AND classid = $1::int4::oid AND objid = $2::int4::oid
                    """, [.int(UserPublication.lockNamespace), .int(UserPublication.lockKey(user))]
                ).rows.first?.int("pid")
            }
            let backend = try #require(pid, "A holds no advisory lock")
            try harness.database.withConnection { connection in
                _ = try connection.query("SELECT pg_terminate_backend($1::int4)", [.int(backend)])
            }

            let outcome = try workerB.run(
                jobID: "job-b", userID: user, requestedAt: Date(), objects: [objectB], blurHash: nil
            ).get().disposition
            #expect(outcome == .applied(version: 1, path: key))
            doneA.wait()
            #expect(resultA.withLock { $0 } != "published", "A committed on a terminated connection")
            #expect(try harness.profile(user)?.version == 1)
            #expect(try harness.store.get(key).data == bytesB, "the public key serves A's bytes as B's version")
            try expectPublicBytesMatchLedger(harness, user)
            // A repair (the redelivery of B's job) copies version 1 again: still B's bytes.
            let repeated = try workerB.run(
                jobID: "job-b", userID: user, requestedAt: Date(), objects: [objectB], blurHash: nil
            ).get().disposition
            #expect(repeated == .duplicate(version: 1, path: key))
            try expectPublicBytesMatchLedger(harness, user)
        }
    }
}

/// Holds the first versioned upload of the store it gates: signals `entered`, waits for `release`,
/// then writes and signals `landed` (a PUT in flight that reaches the store late).
private final class UploadGate: Sendable {
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let landed = DispatchSemaphore(value: 0)
    private let held = Mutex<String?>(nil)

    /// The real store, with its first versioned `put` delayed by this gate.
    func gating(_ base: any ObjectStore) -> HookedStore {
        HookedStore(
            base: base,
            beforePut: { key in
                let first =
                    key.contains("/versions/")
                    && self.held.withLock { held in
                        defer { held = held ?? key }
                        return held == nil
                    }
                guard first else { return }
                self.entered.signal()
                self.release.wait()
            },
            afterPut: { key in
                if self.held.withLock({ $0 == key }) { self.landed.signal() }
            })
    }
}
