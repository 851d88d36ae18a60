import CropProtocol
import Database
import Foundation
import Logging
import Storage

/// Check → upload → bump → copy for one user, one at a time across the fleet (docs/ARCHITECTURE.md §3).
///
/// Everything runs on one Postgres connection holding a session advisory lock on the user
/// (`pg_advisory_lock(1635148148, fold(user id))`, waited for at most `lockTimeout`): lock, check, publish and unlock
/// are one round trip each (the calls of migration 0005), plus one fence per storage write:
///
/// 1. decide under the lock: a duplicate, a superseded request or another user's job id uploads nothing;
/// 2. upload the renders to `users/{uid}/versions/{N}/{job tag}/avatar_{size}.{ext}` (N = current version + 1;
///    the tag is unique per job, so an upload that lands after its worker lost the lock touches no one else's N);
/// 3. one transaction (`avatar_publish`) bumps the profile from N-1 to N and records the job as succeeded with the
///    SHA-256 of the avatar's bytes — a failure here leaves the public keys and the database as they were;
/// 4. copy the versioned objects onto the public keys `users/{uid}/avatar_{size}.{ext}`, then delete every other
///    object under `users/{uid}/` (version N-1's public keys that N does not rewrite, older versions, uploads that
///    never committed).
///
/// Every storage write of 2–4 is fenced: it starts only while the lock's connection answers and the profile is at
/// the expected version (`fence`), so a publication that lost its lock stops instead of writing over the next one.
/// A job that loses (duplicate, superseded) repairs: copies the current version's versioned objects onto the public
/// keys and deletes the rest, so a crash or a storage failure between 3 and 4 is mended by the redelivery, the
/// replay, or the next job of the user.
struct UserPublication: Sendable {
    let client: PostgresClient
    let avatars: any ObjectStore
    let uploadRetry: RetryPolicy
    let cacheControl: String
    let lockTimeout: Duration
    let logger: Logger
    /// TEST-ONLY (`JobTestSeams`): nil in production.
    var testSeams: (any JobTestSeams)? = nil

    /// One rendered object to publish; the avatar itself first.
    struct Object: Sendable {
        var publicKey: String
        var data: [UInt8]
        var contentType: String
    }

    /// What a publication did: the job's disposition and its storage writes.
    struct Published: Equatable, Sendable {
        var disposition: JobDisposition
        var storageWrites: StorageWrites
    }

    /// One run: what it published, or why it failed, and the phases it went through either way.
    struct Run: Sendable {
        var result: Result<Published, any Error>
        /// Its phases as far as it got (`JobStage`): lock wait and commit `database`; uploads, public copies or a repair
        /// `upload`.
        var steps: [JobStep] = []

        func get() throws -> Published { try result.get() }
    }

    /// Publishes `objects` (nil: the caller found the job lost before rendering; it is settled and the public
    /// keys repaired). `mayCommit` is asked right before the version bump: false (the job's deadline passed)
    /// ends the job as TIMEOUT with nothing committed. A job id the ledger holds for another user fails as
    /// `JobFailure.foreignJobID`.
    func run(
        jobID: String, userID: UUID, requestedAt: Date, objects: [Object]?, blurHash: String?,
        mayCommit: () -> Bool = { true }
    ) -> Run {
        var steps: [JobStep] = []
        let result = Result { () throws -> Published in
            try client.withConnection { connection in
                let waiting = ContinuousClock.now
                return try withUserLock(connection, userID: userID) {
                    steps.append(JobStep(.database, from: waiting, to: .now))
                    return try locked(
                        connection, jobID: jobID, userID: userID, requestedAt: requestedAt, objects: objects,
                        blurHash: blurHash, mayCommit: mayCommit, steps: &steps)
                }
            }
        }
        return Run(result: result, steps: steps)
    }

    private func locked(
        _ connection: PostgresConnection, jobID: String, userID: UUID, requestedAt: Date, objects: [Object]?,
        blurHash: String?, mayCommit: () -> Bool, steps: inout [JobStep]
    ) throws -> Published {
        let check = try AvatarLedger.check(connection, jobID: jobID, userID: userID, requestedAt: requestedAt)
        switch check.precheck {
        case .foreignJobID:
            throw JobFailure.foreignJobID
        case .duplicate(let version, let path):
            var deleted = 0
            let writes = try repair(connection, userID: userID, check, steps: &steps, deleted: &deleted)
            return Published(disposition: .duplicate(version: version, path: path), storageWrites: writes)
        case .superseded:
            if check.forgotten {
                // The user was forgotten after this request: nothing of it stays, not even its ledger row, nor an
                // object its own earlier attempt uploaded after losing the lock (the repair deletes what the
                // current version does not name).
                try AvatarLedger.deleteForgotten(connection, jobID: jobID, userID: userID)
            } else {
                try AvatarLedger.recordSuperseded(connection, jobID: jobID, userID: userID, requestedAt: requestedAt)
            }
            var deleted = 0
            let writes = try repair(connection, userID: userID, check, steps: &steps, deleted: &deleted)
            let current = JobDisposition.superseded(version: check.current.version, path: check.current.path)
            return Published(disposition: current, storageWrites: writes)
        case .proceed:
            break
        }
        guard let objects, let avatar = objects.first else {
            throw JobFailure(.internal, detail: "a job found lost before rendering is no longer lost")
        }
        let version = check.current.version + 1
        var writes = StorageWrites()
        let uploading = ContinuousClock.now
        for object in objects {
            writes += try store(
                .put(
                    Self.versionedKey(object.publicKey, version: version, jobID: jobID), object.data,
                    object.contentType),
                fence: { try fence(connection, userID: userID, version: check.current.version) })
        }
        steps.append(JobStep(.upload, from: uploading, to: .now))
        testSeams?.beforeCommit(jobID: jobID)
        // The point of no return: past it the job's deadline no longer ends it (JobDeadline).
        guard mayCommit() else { throw JobFailure.timedOut }
        testSeams?.whileCommitting(jobID: jobID)
        let published: Int64
        let committing = ContinuousClock.now
        do {
            defer { steps.append(JobStep(.database, from: committing, to: .now)) }
            published = try AvatarLedger.apply(
                connection, jobID: jobID, userID: userID, requestedAt: requestedAt, expected: check.current.version,
                path: avatar.publicKey, renditionPaths: objects.dropFirst().map(\.publicKey),
                sha256: ObjectDigest.sha256Hex(avatar.data), blurHash: blurHash)
        } catch is AvatarLedger.Duplicate {
            // Cannot happen under the lock unless the ledger is written without it; decide again next time.
            throw JobFailure(
                .databaseUnavailable, errorClass: .transient, detail: "the job succeeded meanwhile elsewhere")
        } catch is AvatarLedger.VersionMoved {
            throw JobFailure(.internal, errorClass: .transient, detail: "the avatar version moved under the lock")
        } catch is AvatarLedger.Forgotten {
            throw JobFailure(
                .databaseUnavailable, errorClass: .transient, detail: "the user was forgotten without this job's lock")
        }
        testSeams?.afterCommit(jobID: jobID)
        let copying = ContinuousClock.now
        defer { steps.append(JobStep(.upload, from: copying, to: .now)) }
        for object in objects {
            writes += try store(
                .copy(
                    Self.versionedKey(object.publicKey, version: published, jobID: jobID), object.publicKey,
                    object.contentType),
                fence: { try fence(connection, userID: userID, version: published) })
        }
        // docs/ARCHITECTURE.md §7: after N the objects under the user's prefix are exactly N's: a public key of N-1
        // that N did not rewrite (an extra size, the other format), N-1's versioned objects and anything a
        // publication that lost its lock left are deleted, with the upload retries.
        let keep = Set(
            objects.flatMap { [$0.publicKey, Self.versionedKey($0.publicKey, version: published, jobID: jobID)] })
        var deleted = 0
        writes += try deleteAllBut(keep, connection, userID: userID, version: published, deleted: &deleted)
        return Published(disposition: .applied(version: published, path: avatar.publicKey), storageWrites: writes)
    }

    /// Makes the user's prefix hold the current version again and nothing else: its public keys are copied again
    /// from its versioned objects, then every other object under `users/{uid}/` is deleted (a stale public key a
    /// crash kept, older versions, uploads of a publication that lost the lock; for a forgotten user, everything
    /// unless a later request published since). A profile whose current version's keys the ledger does not know
    /// (published before migration 0004) is only copied, never swept.
    private func repair(
        _ connection: PostgresConnection, userID: UUID, _ check: AvatarLedger.Check, steps: inout [JobStep],
        deleted: inout Int
    ) throws -> StorageWrites {
        let repairing = ContinuousClock.now
        defer { steps.append(JobStep(.upload, from: repairing, to: .now)) }
        var writes = StorageWrites()
        var keep = Set<String>()
        for key in check.currentKeys ?? [] {
            let sources = versionedSources(key, check)
            // A version published before the job tag has its objects at the untagged key.
            let source = sources.first { (try? avatars.exists($0)) == true } ?? sources[0]
            writes += try store(
                .copy(source, key, ContentTypes.forKey(key) ?? "application/octet-stream"),
                fence: { try fence(connection, userID: userID, version: check.current.version) })
            keep.formUnion([key] + sources)
        }
        guard check.currentKeys != nil || check.current.version == 0 else { return writes }
        writes += try deleteAllBut(keep, connection, userID: userID, version: check.current.version, deleted: &deleted)
        return writes
    }

    /// Under the user's lock, leaves the user's prefix holding the current version and nothing else (`repair`); a
    /// forget's last look (`UserForgetting`). Returns the objects deleted.
    func tidy(userID: UUID) throws -> Int {
        try client.withConnection { connection in
            try withUserLock(connection, userID: userID) {
                // Only the current version matters here: no job, and the earliest time.
                let check = try AvatarLedger.check(
                    connection, jobID: "", userID: userID, requestedAt: Date(timeIntervalSince1970: 0))
                var steps: [JobStep] = []
                var deleted = 0
                _ = try repair(connection, userID: userID, check, steps: &steps, deleted: &deleted)
                return deleted
            }
        }
    }

    /// The fence before every write after the check (docs/ARCHITECTURE.md §4, "Forgetting"): the user's lock is a
    /// session lock, so a query that answers on its connection proves it still held, and the profile must still be
    /// at `version`. A publication whose connection was lost stops here (a `DatabaseError`: it runs again from the
    /// check, and its repair mends what it left), so it never copies a stale version over the next one's keys,
    /// deletes them, or starts an upload after a forget.
    func fence(_ connection: PostgresConnection, userID: UUID, version: Int64) throws {
        let current = try connection.query(
            "SELECT coalesce((SELECT avatar_version FROM profiles WHERE id = $1), 0) AS version", [.uuid(userID)]
        ).rows.first?.int("version")
        guard current == version else {
            throw JobFailure(.internal, errorClass: .transient, detail: "the avatar version moved under the lock")
        }
    }

    /// docs/ARCHITECTURE.md §7: where `jobID`'s publication of `version` keeps its copy of `key`, a folder of its own
    /// (`AvatarKeys.versionedKey`, tagged by the first 16 hex digits of the job id's SHA-256).
    static func versionedKey(_ key: String, version: Int64, jobID: String) -> String {
        AvatarKeys.versionedKey(
            key, version: version, publication: String(ObjectDigest.sha256Hex(Array(jobID.utf8)).prefix(16)))
    }

    /// The current version's versioned copies of `key`: under its job's tag, then the untagged key of versions
    /// published before the tag.
    private func versionedSources(_ key: String, _ check: AvatarLedger.Check) -> [String] {
        let untagged = AvatarKeys.versionedKey(key, version: check.current.version)
        guard let job = check.currentJobID else { return [untagged] }
        return [Self.versionedKey(key, version: check.current.version, jobID: job), untagged]
    }
}
