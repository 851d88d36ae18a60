import CropProtocol
import Database
import Foundation
import Logging
import Storage

/// Check → upload → bump → copy for one user, one at a time across the fleet (DESIGN §3).
///
/// Everything runs on one Postgres connection holding a session advisory lock on the user
/// (`pg_advisory_lock(1635148148, fold(user id))`, waited for at most `lockTimeout`), in four round trips for a
/// publication (lock, check, publish, unlock: the calls of migration 0005):
///
/// 1. decide under the lock: a duplicate, a superseded request or another user's job id uploads nothing;
/// 2. upload the renders to `users/{uid}/versions/{N}/avatar_{size}.{ext}` (N = current version + 1);
/// 3. one transaction (`avatar_publish`) bumps the profile from N-1 to N and records the job as succeeded with the
///    SHA-256 of the avatar's bytes — a failure here leaves the public keys and the database as they were;
/// 4. copy the versioned objects onto the public keys `users/{uid}/avatar_{size}.{ext}`, then delete version
///    N-1's versioned objects.
///
/// A job that loses (duplicate, superseded) repairs the public keys from the current version's versioned
/// objects, so a crash or a storage failure between 3 and 4 is mended by the redelivery, the replay, or the
/// next job of the user.
struct UserPublication: Sendable {
    let client: PostgresClient
    let avatars: any ObjectStore
    let uploadRetry: RetryPolicy
    let cacheControl: String
    let lockTimeout: Duration
    let logger: Logger
    /// Test hook: runs after the versioned upload, before the publishing transaction.
    let beforeCommit: (@Sendable (String) -> Void)?
    /// Test hook: runs once the job may commit (its deadline no longer ends it), before the transaction.
    var whileCommitting: (@Sendable (String) -> Void)? = nil
    /// Time spent in storage writes (the `upload` stage of the metrics), shared by every write of a job.
    let storageTime = StorageTime()

    /// Accumulates the time of storage writes; one job's writes run on one thread at a time.
    final class StorageTime: @unchecked Sendable {
        // @unchecked Sendable: written by the job's own thread only, read after its writes returned.
        var spent: Duration = .zero
    }

    /// One rendered object to publish; the avatar itself first.
    struct Object: Sendable {
        var publicKey: String
        var data: [UInt8]
        var contentType: String
    }

    enum Outcome: Equatable, Sendable {
        case published(version: Int64)
        case duplicate(version: Int64, path: String?)
        case superseded(current: AvatarLedger.Current)
        case foreignJobID
    }

    /// Publishes `objects` (nil: the caller found the job lost before rendering; it is settled and the public
    /// keys repaired). `mayCommit` is asked right before the version bump: false (the job's deadline passed)
    /// ends the job as TIMEOUT with nothing committed. Returns the outcome and the storage attempts made.
    func run(
        jobID: String, userID: UUID, requestedAt: Date, objects: [Object]?, blurHash: String?,
        mayCommit: () -> Bool = { true }
    ) throws -> (Outcome, attempts: Int) {
        try client.withConnection { connection in
            try withUserLock(connection, userID: userID) {
                try locked(
                    connection, jobID: jobID, userID: userID, requestedAt: requestedAt, objects: objects,
                    blurHash: blurHash, mayCommit: mayCommit)
            }
        }
    }

    private func locked(
        _ connection: PostgresConnection, jobID: String, userID: UUID, requestedAt: Date, objects: [Object]?,
        blurHash: String?, mayCommit: () -> Bool
    ) throws -> (Outcome, attempts: Int) {
        let check = try AvatarLedger.check(connection, jobID: jobID, userID: userID, requestedAt: requestedAt)
        switch check.precheck {
        case .foreignJobID:
            return (.foreignJobID, 0)
        case .alreadySucceeded(let version, let path):
            return (.duplicate(version: version, path: path), try repair(check))
        case .superseded where check.forgotten:
            try AvatarLedger.deleteForgotten(connection, jobID: jobID, userID: userID)
            return (.superseded(current: check.current), try repair(check))
        case .superseded:
            try AvatarLedger.recordSuperseded(connection, jobID: jobID, userID: userID, requestedAt: requestedAt)
            return (.superseded(current: check.current), try repair(check))
        case .proceed:
            break
        }
        guard let objects, let avatar = objects.first else {
            throw JobFailure(.internal, detail: "a job found lost before rendering is no longer lost")
        }
        let version = check.current.version + 1
        var attempts = 0
        for object in objects {
            attempts += try store(
                .put(AvatarKeys.versionedKey(object.publicKey, version: version), object.data, object.contentType))
        }
        beforeCommit?(jobID)
        // The point of no return: past it the job's deadline no longer ends it (JobDeadline).
        guard mayCommit() else { throw CropJobProcessor.timedOut }
        whileCommitting?(jobID)
        let published: Int64
        do {
            published = try AvatarLedger.apply(
                connection, jobID: jobID, userID: userID, requestedAt: requestedAt, expected: check.current.version,
                path: avatar.publicKey, renditionPaths: objects.dropFirst().map(\.publicKey),
                sha256: ObjectDigest.sha256Hex(avatar.data), blurHash: blurHash)
        } catch is AvatarLedger.AlreadySucceeded {
            // Cannot happen under the lock unless the ledger is written without it; decide again next time.
            throw JobFailure(
                .databaseUnavailable, errorClass: .transient, detail: "the job succeeded meanwhile elsewhere")
        } catch is AvatarLedger.VersionMoved {
            throw JobFailure(.internal, errorClass: .transient, detail: "the avatar version moved under the lock")
        }
        for object in objects {
            attempts += try store(
                .copy(
                    AvatarKeys.versionedKey(object.publicKey, version: published), object.publicKey,
                    object.contentType))
        }
        // The previous version's versioned objects are no longer needed (best effort). Under the lock the version
        // went from the checked one to the next, so the check's keys are the previous version's.
        for key in check.currentKeys ?? [] {
            try? avatars.delete(AvatarKeys.versionedKey(key, version: check.current.version))
        }
        return (.published(version: published), attempts)
    }

    /// Makes the public keys serve the current version's bytes again (copies from its versioned objects).
    private func repair(_ check: AvatarLedger.Check) throws -> Int {
        var attempts = 0
        for key in check.currentKeys ?? [] {
            attempts += try store(
                .copy(
                    AvatarKeys.versionedKey(key, version: check.current.version), key,
                    ContentTypes.forKey(key) ?? "application/octet-stream"))
        }
        return attempts
    }

    /// One storage write.
    private enum Write {
        case put(String, [UInt8], String)
        case copy(String, String, String)
    }

    /// Runs a write with the upload retries; returns the attempts made.
    private func store(_ write: Write) throws -> Int {
        let started = ContinuousClock.now
        defer { storageTime.spent += ContinuousClock.now - started }
        do {
            return try uploadRetry.run(
                { _ throws(StorageError) in
                    switch write {
                    case .put(let key, let data, let contentType):
                        try avatars.put(
                            key, data: data, options: PutOptions(contentType: contentType, cacheControl: cacheControl))
                    case .copy(let source, let destination, let contentType):
                        try avatars.copy(
                            from: source, to: destination,
                            options: PutOptions(contentType: contentType, cacheControl: cacheControl))
                    }
                },
                onRetry: { error, attempt, delay in
                    logger.warning(
                        "storage write failed, retrying",
                        metadata: ["error": "\(error)", "attempt": "\(attempt)", "delay": "\(delay)"])
                }
            ).attempts
        } catch {
            throw JobFailure(upload: error)
        }
    }

    // MARK: - The user's lock

    /// The advisory lock's first key: "avat".
    static let lockNamespace: Int64 = 0x6176_6174

    /// The lock's second key: the user id folded to 32 bits (a collision only serialises two users).
    static func lockKey(_ userID: UUID) -> Int64 {
        let bytes = withUnsafeBytes(of: userID.uuid) { Array($0) }
        var folded: UInt32 = 0
        for chunk in stride(from: 0, to: 16, by: 4) {
            folded ^=
                UInt32(bytes[chunk]) << 24 | UInt32(bytes[chunk + 1]) << 16 | UInt32(bytes[chunk + 2]) << 8
                | UInt32(bytes[chunk + 3])
        }
        return Int64(Int32(bitPattern: folded))
    }

    /// Takes the user's lock in one call (`avatar_lock_user`, migration 0005: lock_timeout for that call only),
    /// runs `body`, and unlocks. `UserForgetting` takes the same lock.
    func withUserLock<T>(_ connection: PostgresConnection, userID: UUID, _ body: () throws -> T) throws -> T {
        let key = Self.lockKey(userID)
        let milliseconds = Int64(max(1, min(Int(Int32.max), Int(lockTimeout.components.seconds * 1000))))
        do {
            try connection.query(
                "SELECT avatar_lock_user($1::int4, $2::int4, $3::int4)",
                [.int(Self.lockNamespace), .int(key), .int(milliseconds)])
        } catch {
            guard error.sqlState == .lockNotAvailable else { throw error }
            throw JobFailure(
                .databaseUnavailable, errorClass: .transient,
                detail: "the user's lock was not free within \(milliseconds) ms")
        }
        let value: Result<T, any Error>
        do {
            value = .success(try body())
        } catch {
            value = .failure(error)
        }
        if connection.isHealthy {
            do {
                try connection.query(
                    "SELECT pg_advisory_unlock($1::int4, $2::int4)", [.int(Self.lockNamespace), .int(key)])
            } catch {
                _ = try? connection.query("SELECT pg_advisory_unlock_all()")
            }
        }
        return try value.get()
    }
}
