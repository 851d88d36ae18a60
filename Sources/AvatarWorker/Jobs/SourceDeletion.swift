import CropProtocol
import Database
import Foundation
import Logging
import Metrics
import Storage

/// What happens to a job's source photo once the job no longer needs it (`storage.delete-source`,
/// docs/ARCHITECTURE.md §4). The originals carry GPS and camera EXIF the avatar strips.
public enum SourceDeletion: String, Sendable, CaseIterable {
    /// Sources stay; the app or a bucket lifecycle rule removes them.
    case never
    /// A job that ends applied, duplicate or superseded has its source deleted `storage.delete-source-delay-seconds`
    /// later (`SourceDeletionQueue`), so a re-crop of the same upload still finds it (a superseded job can never
    /// apply, and a duplicate's first run applied). A failed job keeps it, so a replay can still render it.
    case afterSuccess = "after-success"

    /// Whether a job with this outcome is done with its source.
    func deletes(after outcome: JobReport.Outcome) -> Bool {
        switch (self, outcome) {
        case (.afterSuccess, .success(.applied)), (.afterSuccess, .success(.duplicate)),
            (.afterSuccess, .success(.superseded)):
            true
        default: false
        }
    }
}

/// The deferred deletions of source photos (`avatar_source_deletions`, migration 0010): a job done with its source
/// records the key, due `delay` later; a job that starts on a recorded key pushes it out again; the worker's
/// `SourceDeletionSweeper` deletes what is due. So a user who crops the same upload twice (one request right after
/// the other, or the second after the first's result) gets both crops, and the upload is gone `delay` after the
/// last of them. A deletion the store refuses stays recorded and is tried again at every sweep; each attempt is
/// counted in `avatar_source_deletions_total{result}` (`deleted`, `failed`).
public struct SourceDeletionQueue: Sendable {
    public let client: PostgresClient
    public let sources: any ObjectStore
    /// `storage.delete-source-delay-seconds`.
    public let delay: Duration

    public init(client: PostgresClient, sources: any ObjectStore, delay: Duration) {
        self.client = client
        self.sources = sources
        self.delay = delay
    }

    /// Sources deleted per sweep transaction.
    static let sweepBatch = 50

    /// The counter's `result` label values.
    public enum Result: String, CaseIterable, Sendable {
        case deleted, failed
    }

    static func count(_ result: Result, _ n: Int = 1) {
        guard n > 0 else { return }
        Counter(label: MetricName.sourceDeletions, dimensions: [("result", result.rawValue)]).increment(by: n)
    }

    private var delaySeconds: PostgresValue { .double(Double(delay.components.seconds)) }

    /// A job of `userID` requested at `requestedAt` is done with `key`: it is deleted `delay` from now, or later if
    /// another job pushed it out further. When the user's tombstone covers the request (migration 0009: the user was
    /// forgotten since), it is due at once, whatever was recorded before: nothing of a forgotten user waits.
    func schedule(_ key: String, userID: UUID, requestedAt: Date) throws {
        try client.withConnection { connection in
            _ = try connection.query(
                """
                INSERT INTO avatar_source_deletions AS d (source_key, user_id, due_at)
                VALUES ($1, $3, CASE WHEN avatar_forgotten($3, $4) THEN now()
                                     ELSE now() + make_interval(secs => $2::float8) END)
                ON CONFLICT (source_key) DO UPDATE
                   SET due_at = CASE WHEN avatar_forgotten($3, $4) THEN now() ELSE greatest(d.due_at, EXCLUDED.due_at) END
                """, [.text(key), delaySeconds, .uuid(userID), .timestamp(requestedAt)])
        }
    }

    /// Deletes a source and, on a bucket that keeps versions, every old version of it (docs/DATA.md, window 1).
    private func delete(_ key: String) throws(StorageError) {
        try sources.delete(key)
        _ = try sources.deleteNoncurrentVersions(of: key)
    }

    /// A forget of `userID` (`UserForgetting`, under the user's lock): every deletion recorded for the user's sources
    /// is due at once, so the next sweep deletes the uploads and their rows.
    static func expedite(userID: UUID, on connection: PostgresConnection) throws {
        _ = try connection.query(
            "UPDATE avatar_source_deletions SET due_at = now() WHERE user_id = $1 AND due_at > now()", [.uuid(userID)])
    }

    /// A forget of `userID` (`UserForgetting`, before it returns; docs/DATA.md, window 7): deletes every source
    /// recorded for the user now, and its row. Throws when the store refuses one (the forget fails, stays pending and
    /// is run again). Returns the sources deleted.
    func deleteAll(of userID: UUID, retry: RetryPolicy) throws -> Int {
        let keys = try client.withConnection { connection in
            try connection.query(
                "SELECT source_key FROM avatar_source_deletions WHERE user_id = $1", [.uuid(userID)]
            ).rows.compactMap { try $0.text("source_key") }
        }
        for key in keys {
            do {
                _ = try retry.run({ _ throws(StorageError) in try delete(key) })
            } catch {
                Self.count(.failed)
                throw JobFailure(upload: error)
            }
            try client.withConnection { connection in
                _ = try connection.query(
                    "DELETE FROM avatar_source_deletions WHERE source_key = $1 AND user_id = $2",
                    [.text(key), .uuid(userID)])
            }
        }
        Self.count(.deleted, keys.count)
        return keys.count
    }

    /// A job starts on `key`: a deletion recorded for it waits at least `delay` from now, so it outlives the job.
    func postpone(_ key: String) throws {
        try client.withConnection { connection in
            _ = try connection.query(
                """
                UPDATE avatar_source_deletions SET due_at = greatest(due_at, now() + make_interval(secs => $2::float8))
                WHERE source_key = $1
                """, [.text(key), delaySeconds])
        }
    }

    /// Deletes the sources whose time has come, `sweepBatch` at a time, until none is due. Rows are locked while
    /// their source is deleted (`SKIP LOCKED`: the workers of a fleet sweep side by side, never the same key);
    /// a source deleted (or already gone) loses its row, one the store refused is tried again `retry` later.
    /// Returns the sources deleted and the deletions that failed.
    public func sweep(retry: Duration, logger: Logger) throws -> (deleted: Int, failed: Int) {
        var deleted = 0
        var failed = 0
        while true {
            let batch: (deleted: Int, failed: Int, due: Int) = try client.withConnection { connection in
                try connection.transaction { connection in
                    let keys = try connection.query(
                        """
                        SELECT source_key FROM avatar_source_deletions WHERE due_at <= now()
                        ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED
                        """, [.int(Int64(Self.sweepBatch))]
                    ).rows.compactMap { try $0.text("source_key") }
                    var batch = (deleted: 0, failed: 0, due: keys.count)
                    for key in keys {
                        do {
                            try delete(key)
                            _ = try connection.query(
                                "DELETE FROM avatar_source_deletions WHERE source_key = $1", [.text(key)])
                            batch.deleted += 1
                        } catch let error as StorageError {
                            logger.warning(
                                "could not delete a source photo; it is tried again at the next sweep",
                                metadata: [LogKey.errorCode: "\(error.code)", LogKey.error: "\(error)"])
                            _ = try connection.query(
                                """
                                UPDATE avatar_source_deletions SET due_at = now() + make_interval(secs => $2::float8)
                                WHERE source_key = $1
                                """, [.text(key), .double(Double(retry.components.seconds))])
                            batch.failed += 1
                        }
                    }
                    return batch
                }
            }
            Self.count(.deleted, batch.deleted)
            Self.count(.failed, batch.failed)
            deleted += batch.deleted
            failed += batch.failed
            if batch.due < Self.sweepBatch || batch.deleted == 0 { return (deleted, failed) }
        }
    }

    /// The key `/readyz` deletes to learn whether the credentials may delete sources: under the sources' prefix
    /// (`worker.source-key-template`'s fixed start, else the store's root), a name no upload has. S3 answers a
    /// DELETE of a missing key with 204 when the delete right is granted and 403 when it is not, so the check
    /// deletes nothing real.
    public static func probeKey(template: SourceKeyTemplate?) -> String {
        (template?.fixedPrefix ?? "") + "avatar-cropper-delete-check"
    }
}

extension CropJobProcessor {
    var sourceDeletions: SourceDeletionQueue {
        SourceDeletionQueue(
            client: dependencies.database, sources: dependencies.sources, delay: dependencies.sourceDeletionDelay)
    }

    /// A crop job about to read its source: a deletion already recorded for it (an earlier job's, the same upload
    /// cropped again) waits until this job is done too. Best effort, as `scheduleSourceDeletion`.
    func postponeSourceDeletion(of request: ValidatedCropRequest) {
        guard dependencies.deleteSource == .afterSuccess, request.kind == .crop else { return }
        do {
            _ = try dependencies.databaseRetry.run(
                { _ in try sourceDeletions.postpone(request.sourceKey) },
                isTransient: { ($0 as? DatabaseError)?.isTransient ?? false })
        } catch {
            dependencies.logger.warning(
                "could not postpone the deletion of the job's source",
                metadata: [LogKey.jobID: "\(request.jobID)", LogKey.error: "\(error)"])
        }
    }

    /// Records that a crop job done with its source may have it deleted (`SourceDeletionQueue`). Best effort: the
    /// job's outcome stands; a source whose deletion could not be recorded stays (counted as a failed deletion,
    /// and a bucket lifecycle rule catches it).
    func scheduleSourceDeletion(of report: JobReport) {
        guard let request = report.request, request.kind == .crop,
            dependencies.deleteSource.deletes(after: report.outcome)
        else { return }
        do {
            _ = try dependencies.databaseRetry.run(
                { _ in
                    try sourceDeletions.schedule(
                        request.sourceKey, userID: request.userID, requestedAt: request.requestedAt)
                },
                isTransient: { ($0 as? DatabaseError)?.isTransient ?? false })
        } catch {
            SourceDeletionQueue.count(.failed)
            dependencies.logger.warning(
                "could not record the deletion of the job's source",
                metadata: [LogKey.jobID: "\(request.jobID)", LogKey.error: "\(error)"])
        }
    }
}
