import CropProtocol
import Database
import Foundation
import Logging
import Storage

/// Check → upload → bump → copy for one user, one at a time across the fleet (DESIGN §3).
///
/// Everything runs on one Postgres connection holding a session advisory lock on the user
/// (`pg_advisory_lock(1635148148, fold(user id))`), waited for at most `lockTimeout`:
///
/// 1. decide under the lock: a duplicate, a superseded request or another user's job id uploads nothing;
/// 2. upload the renders to `users/{uid}/versions/{N}/avatar_{size}.{ext}` (N = current version + 1);
/// 3. one transaction bumps the profile from N-1 to N and records the job as succeeded with the SHA-256 of the
///    avatar's bytes — a failure here leaves the public keys and the database as they were;
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
            return (.duplicate(version: version, path: path), try repair(connection, userID, check.current))
        case .superseded:
            try AvatarLedger.recordSuperseded(connection, jobID: jobID, userID: userID, requestedAt: requestedAt)
            return (.superseded(current: check.current), try repair(connection, userID, check.current))
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
        } catch {
            if AvatarLedger.isAlreadySucceeded(error) {
                // Cannot happen under the lock unless the ledger is written without it; decide again next time.
                throw JobFailure(
                    .databaseUnavailable, errorClass: .transient, detail: "the job succeeded meanwhile elsewhere")
            }
            if (error as? PostgresTransactionError)?.closureError is AvatarLedger.VersionMoved {
                throw JobFailure(.internal, errorClass: .transient, detail: "the avatar version moved under the lock")
            }
            throw error
        }
        for object in objects {
            attempts += try store(
                .copy(
                    AvatarKeys.versionedKey(object.publicKey, version: published), object.publicKey,
                    object.contentType))
        }
        // The previous version's versioned objects are no longer needed (best effort).
        if let previous = try? AvatarLedger.currentKeys(connection, userID: userID, version: published - 1) {
            for key in previous {
                try? avatars.delete(AvatarKeys.versionedKey(key, version: published - 1))
            }
        }
        return (.published(version: published), attempts)
    }

    /// Makes the public keys serve the current version's bytes again (copies from its versioned objects).
    private func repair(_ connection: PostgresConnection, _ userID: UUID, _ current: AvatarLedger.Current) throws
        -> Int
    {
        guard let keys = try AvatarLedger.currentKeys(connection, userID: userID, version: current.version) else {
            return 0
        }
        var attempts = 0
        for key in keys {
            attempts += try store(
                .copy(
                    AvatarKeys.versionedKey(key, version: current.version), key,
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

    private func withUserLock<T>(_ connection: PostgresConnection, userID: UUID, _ body: () throws -> T) throws -> T {
        let key = Self.lockKey(userID)
        let milliseconds = max(1, Int(lockTimeout.components.seconds * 1000))
        try connection.query("SELECT set_config('lock_timeout', $1, false)", [.text("\(milliseconds)ms")])
        var acquired: DatabaseError?
        do {
            try connection.query(
                "SELECT pg_advisory_lock($1::int4, $2::int4)", [.int(Self.lockNamespace), .int(key)])
        } catch {
            acquired = error
        }
        if let failure = acquired {
            _ = try? connection.query("RESET lock_timeout")
            guard failure.sqlState == .lockNotAvailable else { throw failure }
            throw JobFailure(
                .databaseUnavailable, errorClass: .transient,
                detail: "the user's lock was not free within \(milliseconds) ms")
        }
        let value: Result<T, any Error>
        do {
            try connection.query("RESET lock_timeout")
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
