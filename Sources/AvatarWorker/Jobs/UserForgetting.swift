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
/// 1. one transaction (`avatar_forget`, migrations 0007 and 0011) records the tombstone, deletes the user's ledger
///    rows and resets the profile's avatar columns (or deletes the profile row when `profiles` is the migration's
///    own);
/// 2. the user's sources awaiting deletion (`storage.delete-source = after-success`, `SourceDeletionQueue`) are due
///    at once (should the forget stop before step 4, the next sweep deletes them);
/// 3. every object under `users/{uid}/` is deleted: public keys, every versioned object, every rendition, and
///    versioned uploads a failed publication left behind — and, on a bucket that keeps versions, after the last
///    look every old version and delete marker under it;
/// 4. after the last look (below), the user's sources recorded for deletion are deleted, with their rows, before
///    the forget returns. With `storage.delete-source = never` nothing records them: the app deletes its uploads
///    (docs/DATA.md);
/// 5. the results topic's null record for the user is written (`ResultsErasure`; a forget request's own comes with
///    its result instead), and again at the very last look.
///
/// A job of the user in flight either published before the forget took the lock (and the forget erases it) or
/// takes the lock after it: its check then finds the tombstone covering its `requested_at`, it is superseded,
/// uploads nothing and deletes the ledger row it started (`AvatarLedger.Check.forgotten`); its start and its
/// failure write no row either (`avatar_start`, `avatar_record`, migration 0009). A job that lost the lock while a
/// write was on its way is why the forget looks again after `lateWriteWindow`.
///
/// The tombstone does not trust the producer's clock (migration 0011): it covers at least the database's now plus
/// `clockSkew`, the furthest in the future a request's `requested_at` is accepted, so a request accepted before the
/// forget (whatever its stamp) is covered when it comes back. The forget is recorded as pending before it starts
/// (`PendingForgets`) and done only once the last look is: a failure anywhere fails this call (transient), and the
/// workers' `ForgetSweeper` runs the forget again until it completes. Running it again is harmless.
public struct UserForgetting: Sendable {
    let publication: UserPublication
    /// `worker.max-clock-skew-seconds`: how far in the future an accepted request's `requested_at` may be.
    let clockSkew: TimeInterval
    /// The user's sources recorded for deletion (`storage.delete-source = after-success`), deleted before the forget
    /// returns; nil: none are recorded here.
    var sources: SourceDeletionQueue?
    /// Writes the results topic's null record for the user; nil: the forget's caller writes it (a forget request's
    /// publisher).
    var results: ResultsErasure?

    /// What a forget erased.
    public struct Erased: Equatable, Sendable {
        public var ledgerRows: Int
        public var objects: Int
        /// Source photos recorded for deletion and deleted by the forget.
        public var sources = 0
        /// Why the results topic's null record was not written (the workers write it at the forget's last look);
        /// nil: it was, or the caller writes it.
        public var resultsNotErased: String?
    }

    init(
        publication: UserPublication, clockSkew: TimeInterval, sources: SourceDeletionQueue? = nil,
        results: ResultsErasure? = nil
    ) {
        self.publication = publication
        self.clockSkew = clockSkew
        self.sources = sources
        self.results = results
    }

    /// For `avatar-cropper forget` and the worker's `ForgetSweeper`: the worker's database, avatar store, retries,
    /// user lock timeout, accepted clock skew and results topic.
    public init(
        database: PostgresClient, avatars: any ObjectStore, retry: RetryPolicy = RetryPolicy(), lockTimeout: Duration,
        clockSkew: TimeInterval, sources: (any ObjectStore)? = nil, results: ResultsErasure?, logger: Logger
    ) {
        self.init(
            publication: UserPublication(
                client: database, avatars: avatars, uploadRetry: retry, cacheControl: "", lockTimeout: lockTimeout,
                logger: logger),
            clockSkew: clockSkew,
            // The delay does not matter to a forget: it deletes what is recorded at once.
            sources: sources.map { SourceDeletionQueue(client: database, sources: $0, delay: .zero) },
            results: results)
    }

    /// The forgets not completed yet, this one's among them while it runs.
    public var pending: PendingForgets { PendingForgets(client: publication.client) }

    /// Forgets `userID`; a crop request of the user with a `requested_at` up to `requestedAt`, the newest request
    /// erased, or the database's now plus `clockSkew` publishes nothing afterwards. Pending until it returns, and
    /// then until its last look.
    public func run(userID: UUID, requestedAt: Date) throws -> Erased {
        try pending.record(userID: userID, requestedAt: requestedAt)
        var erased = try erase(userID: userID, requestedAt: requestedAt)
        try pending.complete(userID: userID, requestedAt: requestedAt, lastLookAfter: lastLookAfter)
        do {
            try results?.erase(userID: userID)
        } catch {
            erased.resultsNotErased = "\(error)"
        }
        return erased
    }

    /// A forget's very last look (`ForgetSweeper`, `lastLookAfter` after the forget): deletes under the lock what a
    /// write held up after its fence landed since, old versions included, writes the results topic's null record
    /// for the user once more (covering a result published since the forget's), and ends the forget. Returns the
    /// objects deleted.
    func lastLook(userID: UUID, requestedAt: Date) throws -> Int {
        let deleted = try publication.tidy(userID: userID)
        try results?.erase(userID: userID)
        try pending.finishLastLook(userID: userID, requestedAt: requestedAt)
        return deleted
    }

    /// How long after the forget's last look a write can still land (docs/DATA.md, window 3): a write decided
    /// before the forget took the lock lands within the store's `lateWriteHorizon` of that, and the forget looked
    /// again `lateWriteWindow` after; zero when that look was late enough.
    var lastLookAfter: Duration {
        let horizon = publication.avatars.lateWriteHorizon
        return horizon > lateWriteWindow ? horizon - lateWriteWindow + .seconds(1) : .zero
    }

    /// The forget itself: the tombstone, the rows and the objects under the lock, then the last look.
    private func erase(userID: UUID, requestedAt: Date) throws -> Erased {
        let erased = try publication.client.withConnection { connection in
            try publication.withUserLock(connection, userID: userID) {
                let rows = try connection.query(
                    "SELECT avatar_forget($1, $2, $3) AS erased",
                    [.uuid(userID), .timestamp(requestedAt), .double(clockSkew)]
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
        // The look also deletes the old versions and delete markers a versioned bucket keeps of what was deleted or
        // replaced (docs/DATA.md, window 1).
        let late = try publication.tidy(userID: userID)
        let sourcesDeleted = try sources?.deleteAll(of: userID, retry: publication.uploadRetry) ?? 0
        return Erased(ledgerRows: erased.ledgerRows, objects: erased.objects + late, sources: sourcesDeleted)
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
        let forgetting = UserForgetting(
            publication: publication, clockSkew: dependencies.maxClockSkew, sources: sourceDeletions)
        let erased = try databaseCall {
            try forgetting.run(userID: request.userID, requestedAt: request.requestedAt)
        }
        logger.info(
            "user forgotten",
            metadata: [
                LogKey.ledgerRows: "\(erased.ledgerRows)", LogKey.objectsDeleted: "\(erased.objects)",
                LogKey.sources: "\(erased.sources)",
            ])
        return .forgotten(objects: erased.objects)
    }
}
