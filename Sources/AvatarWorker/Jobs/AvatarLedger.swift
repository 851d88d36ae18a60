import Database
import Foundation

/// The `avatar_crop_jobs` ledger and the profile's avatar columns (docs/ARCHITECTURE.md §3–§4):
/// what makes at-least-once delivery an exactly-once effect.
///
/// - a job is (user, job id): a job id first seen for another user is refused, never a duplicate;
/// - a job that already succeeded is a no-op when redelivered or replayed;
/// - a request older than the one already published never overwrites it;
/// - the version bump and the ledger row commit in one transaction, inside the user's lock
///   (`UserPublication`), so check → upload → bump → copy of one user happen one at a time.
struct AvatarLedger: Sendable {
    let client: PostgresClient

    /// What the ledger says about a job, in the result event's words (`JobDisposition`).
    enum Precheck: Equatable, Sendable {
        case proceed
        /// The job already succeeded: the version and path it published.
        case duplicate(version: Int64, path: String?)
        /// A newer request of the user is already published.
        case superseded
        /// The job id is in the ledger for another user.
        case foreignJobID
    }

    /// The avatar a profile names now.
    struct Current: Equatable, Sendable {
        var version: Int64
        var path: String?
    }

    /// Cheap read before fetching and rendering (one round trip, no lock), so a duplicate or stale
    /// request neither renders nor takes the user's lock for long. Decided again under the lock.
    func precheck(jobID: String, userID: UUID, requestedAt: Date) throws -> Precheck {
        try client.withConnection { connection in
            try Self.check(
                connection, jobID: jobID, userID: userID,
                requestedAt: requestedAt
            ).precheck
        }
    }

    /// The ledger row of `jobID` and the profile of `userID`, in one round trip.
    struct Check {
        var precheck: Precheck
        var current: Current
        /// The public keys of the current version (its avatar, then its renditions) from that version's ledger row
        /// (what a repair copies again and what a new version replaces); nil when the profile has none.
        var currentKeys: [String]?
        /// The job that published the current version (its versioned objects are under its tag).
        var currentJobID: String? = nil
        /// The user was forgotten after this request (`UserForgetting`): the job is superseded, and its own ledger
        /// row is deleted rather than recorded.
        var forgotten = false
    }

    static func check(_ connection: PostgresConnection, jobID: String, userID: UUID, requestedAt: Date) throws
        -> Check
    {
        // The current version's row is the one that published it (status succeeded, with its SHA-256); versions
        // start at 1, so a profile at 0 finds none. Requests are ordered by (requested_at, job id), as
        // avatar_publish orders them (migration 0009): of two with the same requested_at, one publishes.
        let result = try connection.query(
            """
            SELECT j.user_id = $2 AS same_user, j.status, j.avatar_version, j.avatar_path,
                   coalesce(p.avatar_requested_at > $3 OR (p.avatar_requested_at = $3
                            AND (c.job_id IS NULL OR c.job_id COLLATE "C" >= $1 COLLATE "C")), false)
                       AS newer_published,
                   coalesce(p.avatar_version, 0) AS current_version, p.avatar_path AS current_path,
                   c.avatar_path AS current_key, array_to_string(c.rendition_paths, ',') AS current_renditions,
                   c.job_id AS current_job, avatar_forgotten($2, $3) AS forgotten
              FROM (SELECT 1) AS one
              LEFT JOIN avatar_crop_jobs j ON j.job_id = $1
              LEFT JOIN profiles p ON p.id = $2
              LEFT JOIN LATERAL (
                    SELECT avatar_path, rendition_paths, job_id FROM avatar_crop_jobs
                     WHERE user_id = $2 AND avatar_version = p.avatar_version AND status = 'succeeded'
                       AND avatar_sha256 IS NOT NULL
                     LIMIT 1) AS c ON true
            """,
            // Compared in SQL, so both sides are rounded to microseconds alike.
            [.text(jobID), .uuid(userID), .timestamp(requestedAt)])
        guard let row = result.rows.first else { return Check(precheck: .proceed, current: Current(version: 0)) }
        let current = Current(version: try row.int("current_version") ?? 0, path: try row.text("current_path"))
        let currentKeys = try row.text("current_key").map { key in
            [key] + (try row.text("current_renditions") ?? "").split(separator: ",").map(String.init)
        }
        let currentJobID = try row.text("current_job")
        let forgotten = try row.bool("forgotten") == true
        let check = { (precheck: Precheck) in
            Check(
                precheck: precheck, current: current, currentKeys: currentKeys, currentJobID: currentJobID,
                forgotten: forgotten)
        }
        if try row.bool("same_user") == false { return check(.foreignJobID) }
        // A request the forget of its user covers never publishes (migration 0007).
        if forgotten { return check(.superseded) }
        if try row.text("status") == "succeeded" {
            return check(
                .duplicate(version: try row.int("avatar_version") ?? 0, path: try row.text("avatar_path")))
        }
        if try row.bool("newer_published") == true { return check(.superseded) }
        return check(.proceed)
    }

    /// What `markStarted` found.
    enum Start: Equatable, Sendable {
        /// Render; `attempt` counts this one.
        case render(attempt: Int)
        /// Renders of this job started `attempts` times and never reported back: a worker died on it each time.
        case crashLooped(attempts: Int)
        /// Another user owns this job id, it succeeded meanwhile, or its user was forgotten since the request:
        /// decided by the caller's next check.
        case notOwned
    }

    /// Records durably, before any byte of the source is decoded, that a render of this job starts. A row
    /// still `started` from earlier attempts means each of those attempts died (the outcome of every attempt
    /// that returns is recorded); after `maxCrashAttempts` of them the job is not rendered again.
    func markStarted(jobID: String, userID: UUID, requestedAt: Date, maxCrashAttempts: Int) throws -> Start {
        try client.withConnection { connection in
            // avatar_start (migration 0009): under the user's lock, nothing for a request a forget covers.
            let started = try connection.query(
                "SELECT avatar_start($1, $2, $3) AS render_attempts",
                [.text(jobID), .uuid(userID), .timestamp(requestedAt)]
            ).rows.first?.int("render_attempts")
            guard let started else { return .notOwned }
            let attempt = Int(started)
            return attempt > maxCrashAttempts ? .crashLooped(attempts: attempt - 1) : .render(attempt: attempt)
        }
    }

    /// Whether the tombstone of a forget of `userID` covers a request made at `requestedAt` (migration 0012): the
    /// user's own forget only, not `avatar_forgotten`'s age rule (a request too old to publish is not its user's
    /// forget).
    func forgetCovers(userID: UUID, requestedAt: Date) throws -> Bool {
        try client.withConnection { connection in
            try connection.query(
                """
                SELECT EXISTS (SELECT FROM avatar_forgotten_users
                                WHERE user_key = avatar_user_key($1) AND forgotten_at >= $2) AS covered
                """, [.uuid(userID), .timestamp(requestedAt)]
            ).rows.first?.bool("covered") ?? false
        }
    }

    /// The job is already in the ledger as succeeded (or the id is another user's): nothing was written.
    struct Duplicate: Error {}
    /// A forget of the user covers the request, though the check under the lock did not say so: the lock was lost.
    /// Nothing was written.
    struct Forgotten: Error {}
    /// The profile moved while the user's lock was held: someone bumps without the lock. Nothing was written.
    struct VersionMoved: Error, CustomStringConvertible {
        var description: String { "the avatar version moved under the user's lock" }
    }

    /// Publishes on `connection` (which holds the user's lock), in one call of `avatar_publish` (migration 0005):
    /// one transaction bumps `avatar_version` from `expected` to `expected + 1` (unless a newer request is
    /// published), sets the path and records the job as succeeded with the SHA-256 of the published bytes.
    /// Throws `VersionMoved` or `Duplicate` when it wrote nothing for those reasons.
    static func apply(
        _ connection: PostgresConnection, jobID: String, userID: UUID, requestedAt: Date, expected: Int64,
        path: String, renditionPaths: [String], sha256: String, blurHash: String?
    ) throws -> Int64 {
        do {
            let published = try connection.query(
                "SELECT avatar_publish($1, $2, $3, $4, $5, $6::text[], $7, $8) AS version",
                [
                    .text(jobID), .uuid(userID), .timestamp(requestedAt), .int(expected), .text(path),
                    .text(Self.textArray(renditionPaths)), .text(sha256), blurHash.map { .text($0) } ?? .null,
                ]
            ).rows.first?.int("version")
            guard let published else { throw VersionMoved() }
            return published
        } catch let error as DatabaseError where error.sqlState == versionMovedState {
            throw VersionMoved()
        } catch let error as DatabaseError where error.sqlState == duplicateState {
            throw Duplicate()
        } catch let error as DatabaseError where error.sqlState == forgottenState {
            throw Forgotten()
        }
    }

    /// The SQLSTATEs `avatar_publish` raises (migration 0005).
    static let versionMovedState = SQLState(rawValue: "AV001")
    static let duplicateState = SQLState(rawValue: "AV002")
    /// Raised by `avatar_publish` since migration 0009.
    static let forgottenState = SQLState(rawValue: "AV003")

    /// Records a job that found a newer avatar already published.
    static func recordSuperseded(_ connection: PostgresConnection, jobID: String, userID: UUID, requestedAt: Date)
        throws
    {
        try record(
            connection, jobID: jobID, userID: userID, requestedAt: requestedAt, status: "superseded",
            errorCode: nil, attempts: 1, firstFailedAt: nil)
    }

    /// Deletes the ledger row of a job whose user was forgotten after it was requested (nothing of the user stays).
    static func deleteForgotten(_ connection: PostgresConnection, jobID: String, userID: UUID) throws {
        try connection.query(
            "DELETE FROM avatar_crop_jobs WHERE job_id = $1 AND user_id = $2", [.text(jobID), .uuid(userID)])
    }

    /// Writes a failure the ledger missed when it happened (`UnrecordedFailures`), only while the job's row still
    /// holds the attempt that failed: never over a success, another outcome, or a later start of the job.
    func recordLateFailure(_ note: UnrecordedFailures.Note) throws {
        try client.withConnection { connection in
            try connection.query(
                """
                UPDATE avatar_crop_jobs
                   SET status = 'failed', error_code = $3, attempts = $4,
                       first_failed_at = COALESCE(first_failed_at, $5), render_attempts = 0, finished_at = now()
                 WHERE job_id = $1 AND user_id = $2 AND status = 'started' AND render_attempts = $6
                """,
                [
                    .text(note.jobID), .uuid(note.userID), .text(note.errorCode), .int(Int64(note.attempts)),
                    .timestamp(note.failedAt), .int(Int64(note.renderAttempt)),
                ])
        }
    }

    /// Records a failed job, unless the ledger already holds a success for it or the id is another user's.
    /// Returns when the job first failed, as the ledger knows it.
    @discardableResult
    func recordFailure(
        jobID: String, userID: UUID, requestedAt: Date, errorCode: String, attempts: Int, firstFailedAt: Date
    ) throws -> Date? {
        try client.withConnection { connection in
            try Self.record(
                connection, jobID: jobID, userID: userID, requestedAt: requestedAt, status: "failed",
                errorCode: errorCode, attempts: attempts, firstFailedAt: firstFailedAt)
        }
    }

    /// Writes the job's outcome row; never overwrites a success or another user's row, and writes nothing (deletes
    /// the job's row) when a forget of the user covers the request. Returns the row's `first_failed_at` (nil when
    /// nothing was written or it has none).
    @discardableResult
    private static func record(
        _ connection: PostgresConnection, jobID: String, userID: UUID, requestedAt: Date, status: String,
        errorCode: String?, attempts: Int, firstFailedAt: Date?
    ) throws -> Date? {
        // avatar_record (migration 0009): under the user's lock, nothing for a request a forget covers.
        try connection.query(
            "SELECT avatar_record($1, $2, $3, $4, $5, $6::int4, $7) AS first_failed_at",
            [
                .text(jobID), .uuid(userID), .timestamp(requestedAt), .text(status),
                errorCode.map { .text($0) } ?? .null, .int(Int64(attempts)),
                firstFailedAt.map { .timestamp($0) } ?? .null,
            ]
        ).rows.first?.timestamp("first_failed_at")
    }

    /// A Postgres text-array literal of keys (`{"a","b"}`); keys never hold quotes or backslashes.
    static func textArray(_ values: [String]) -> String {
        "{" + values.map { "\"\($0)\"" }.joined(separator: ",") + "}"
    }
}
