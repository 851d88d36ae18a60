import CropProtocol
import Database
import Foundation
import Logging
import Storage

/// Forgets a user (docs/ARCHITECTURE.md §4): a `forget` request on the requests topic or `avatar-cropper forget`.
///
/// Under the user's advisory lock (`UserPublication.withUserLock`, the lock every publication holds from its check
/// to its copy), in this order:
///
/// 1. one transaction (`avatar_forget`, migration 0007) records the tombstone, deletes the user's ledger rows and
///    resets the profile's avatar columns (or deletes the profile row when `profiles` is the migration's own);
/// 2. the user's sources awaiting deletion (`storage.delete-source = after-success`, `SourceDeletionQueue`) are due
///    at once: the next sweep deletes them and their rows;
/// 3. every object under `users/{uid}/` is deleted: public keys, every versioned object, every rendition, and
///    versioned uploads a failed publication left behind.
///
/// A job of the user in flight either published before the forget took the lock (and the forget erases it) or
/// takes the lock after it: its check then finds the tombstone covering its `requested_at`, it is superseded,
/// uploads nothing and deletes the ledger row it started (`AvatarLedger.Check.forgotten`); its start and its
/// failure write no row either (`avatar_start`, `avatar_record`, migration 0009). A job that lost the lock while a
/// write was on its way is why the forget looks again after `lateWriteWindow`. A failure
/// after step 1 fails the forget (transient); running it again is harmless and finishes the deletion.
public struct UserForgetting: Sendable {
    let publication: UserPublication

    /// What a forget erased.
    public struct Erased: Equatable, Sendable {
        public var ledgerRows: Int
        public var objects: Int
    }

    init(publication: UserPublication) {
        self.publication = publication
    }

    /// For `avatar-cropper forget`: the worker's database, avatar store, retries and user lock timeout.
    public init(
        database: PostgresClient, avatars: any ObjectStore, retry: RetryPolicy = RetryPolicy(), lockTimeout: Duration,
        logger: Logger
    ) {
        self.init(
            publication: UserPublication(
                client: database, avatars: avatars, uploadRetry: retry, cacheControl: "", lockTimeout: lockTimeout,
                logger: logger))
    }

    /// Forgets `userID`; a crop request of the user with a `requested_at` up to `requestedAt` (or to the newest
    /// request erased) publishes nothing afterwards.
    public func run(userID: UUID, requestedAt: Date) throws -> Erased {
        let erased = try publication.client.withConnection { connection in
            try publication.withUserLock(connection, userID: userID) {
                let rows = try connection.query(
                    "SELECT avatar_forget($1, $2) AS erased", [.uuid(userID), .timestamp(requestedAt)]
                ).rows.first?.int("erased")
                try SourceDeletionQueue.expedite(userID: userID, on: connection)
                return Erased(ledgerRows: Int(rows ?? 0), objects: try deleteEverything(of: userID))
            }
        }
        // docs/ARCHITECTURE.md §4, "Forgetting": every write of a publication starts while its connection proves the
        // user's lock held (`UserPublication.fence`), so a write sent by a job that lost the lock before the forget
        // took it lands within the store's deadline. Once that has passed, a last look under the lock deletes what
        // landed (keeping only what a request made after the forget published meanwhile, if any).
        Thread.sleep(forTimeInterval: lateWriteWindow.seconds)
        let late = try publication.tidy(userID: userID)
        return Erased(ledgerRows: erased.ledgerRows, objects: erased.objects + late)
    }

    /// How long after the forget a write of a job that lost the user's lock can still land: the store's deadline
    /// for a write (`ObjectStore.writeDeadline`) and a second of margin.
    var lateWriteWindow: Duration {
        publication.avatars.writeDeadline + .seconds(1)
    }

    /// Deletes every object under `users/{uid}/`; returns how many.
    private func deleteEverything(of userID: UUID) throws -> Int {
        let keys = try storage { () throws(StorageError) in
            try publication.avatars.keys(withPrefix: AvatarKeys.userPrefix(userID))
        }
        for key in keys {
            try storage { () throws(StorageError) in try publication.avatars.delete(key) }
        }
        return keys.count
    }

    /// One storage call with the upload retries.
    private func storage<T>(_ call: () throws(StorageError) -> T) throws -> T {
        do {
            return try publication.uploadRetry.run({ _ throws(StorageError) in try call() }).value
        } catch {
            throw JobFailure(upload: error)
        }
    }
}

extension CropJobProcessor {
    /// A forget request: erased under the user's lock, reported as `forgotten`.
    func forget(_ request: ValidatedCropRequest, logger: Logger) throws -> JobDisposition {
        let forgetting = UserForgetting(publication: publication)
        let erased = try databaseCall {
            try forgetting.run(userID: request.userID, requestedAt: request.requestedAt)
        }
        logger.info(
            "user forgotten",
            metadata: [LogKey.ledgerRows: "\(erased.ledgerRows)", LogKey.objectsDeleted: "\(erased.objects)"])
        return .forgotten(objects: erased.objects)
    }
}
