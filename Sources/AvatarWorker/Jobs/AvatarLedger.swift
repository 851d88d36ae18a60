import Database
import Foundation

/// The `avatar_crop_jobs` ledger and the profile's avatar columns (DESIGN §3–§4):
/// what makes at-least-once delivery an exactly-once effect.
///
/// - a job that already succeeded is a no-op when redelivered or replayed;
/// - a request older than the one already published never overwrites it;
/// - the version bump and the ledger row commit in one transaction.
struct AvatarLedger: Sendable {
    let client: PostgresClient

    /// What the ledger says before any work is done.
    enum Precheck: Equatable, Sendable {
        case proceed
        case alreadySucceeded(version: Int64, path: String?)
        case superseded
    }

    /// What the final transaction did.
    enum Applied: Equatable, Sendable {
        case published(version: Int64)
        case alreadySucceeded(version: Int64, path: String?)
        case superseded
    }

    /// Cheap read before fetching and rendering (one round trip), so a duplicate or stale
    /// request neither renders nor overwrites the stored avatar.
    func precheck(jobID: String, userID: UUID, requestedAt: Date) throws -> Precheck {
        try client.withConnection { connection in
            let result = try connection.query(
                """
                SELECT j.status, j.avatar_version, j.avatar_path,
                       coalesce(p.avatar_requested_at > $3, false) AS newer_published
                  FROM (SELECT 1) AS one
                  LEFT JOIN avatar_crop_jobs j ON j.job_id = $1
                  LEFT JOIN profiles p ON p.id = $2
                """,
                // Compared in SQL, so both sides are rounded to microseconds alike.
                [.text(jobID), .uuid(userID), .timestamp(requestedAt)])
            guard let row = result.rows.first else { return .proceed }
            if try row.text("status") == "succeeded" {
                return .alreadySucceeded(version: try row.int("avatar_version") ?? 0, path: try row.text("avatar_path"))
            }
            if try row.bool("newer_published") == true { return .superseded }
            return .proceed
        }
    }

    /// The job is already in the ledger as succeeded: the transaction is rolled back.
    private struct AlreadySucceeded: Error {}

    /// Publishes the uploaded avatar in one transaction: bumps `avatar_version` (unless a
    /// newer request is already published), sets the path and records the job as succeeded.
    ///
    /// The ledger insert decides duplicates atomically: two workers racing on the same job
    /// (a rebalance) serialise on the profile row and on the ledger's primary key, and the
    /// one that finds a succeeded row rolls its bump back. The common path is four round
    /// trips: BEGIN, UPDATE, INSERT, COMMIT.
    func apply(
        jobID: String, userID: UUID, requestedAt: Date, path: String, blurHash: String?, attempts: Int
    ) throws -> Applied {
        do {
            return try client.withConnection { connection in
                try connection.transaction { tx -> Applied in
                    guard
                        let version = try bump(
                            tx, userID: userID, requestedAt: requestedAt, path: path, blurHash: blurHash)
                    else {
                        // A success already in the ledger means this is a repeat of a job that won,
                        // not an older request.
                        guard
                            try record(
                                tx, jobID: jobID, userID: userID, requestedAt: requestedAt, status: "superseded",
                                version: nil, path: nil, errorCode: nil, attempts: attempts, firstFailedAt: nil)
                        else {
                            throw AlreadySucceeded()
                        }
                        return .superseded
                    }
                    guard
                        try record(
                            tx, jobID: jobID, userID: userID, requestedAt: requestedAt, status: "succeeded",
                            version: version, path: path, errorCode: nil, attempts: attempts,
                            firstFailedAt: nil)
                    else {
                        throw AlreadySucceeded()
                    }
                    return .published(version: version)
                }
            }
        } catch let error as PostgresTransactionError where error.closureError is AlreadySucceeded {
            return try client.withConnection { connection in
                let row = try connection.query(
                    "SELECT avatar_version, avatar_path FROM avatar_crop_jobs WHERE job_id = $1", [.text(jobID)]
                ).rows.first
                return .alreadySucceeded(
                    version: try row?.int("avatar_version") ?? 0, path: try row?.text("avatar_path"))
            }
        }
    }

    /// Bumps the profile's avatar unless a newer request is published; creates the profile row
    /// when there is none. Returns the new version, or nil when superseded.
    private func bump(
        _ tx: PostgresConnection, userID: UUID, requestedAt: Date, path: String, blurHash: String?
    ) throws -> Int64? {
        let update = """
            UPDATE profiles
               SET avatar_path = $2, avatar_version = avatar_version + 1, avatar_blurhash = $3,
                   avatar_updated_at = now(), avatar_requested_at = $4
             WHERE id = $1 AND (avatar_requested_at IS NULL OR avatar_requested_at <= $4)
            RETURNING avatar_version
            """
        let parameters: [PostgresValue] = [
            .uuid(userID), .text(path), blurHash.map { .text($0) } ?? .null, .timestamp(requestedAt),
        ]
        if let version = try tx.query(update, parameters).rows.first?.int("avatar_version") { return version }
        // No row updated: either there is no profile yet (perhaps another worker is creating it
        // right now: the insert waits for it), or a newer request is published. Try once more.
        try tx.query("INSERT INTO profiles (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", [.uuid(userID)])
        return try tx.query(update, parameters).rows.first?.int("avatar_version")
    }

    /// Records a job that found a newer avatar already published.
    func recordSuperseded(jobID: String, userID: UUID, requestedAt: Date) throws {
        try client.withConnection { connection in
            try record(
                connection, jobID: jobID, userID: userID, requestedAt: requestedAt, status: "superseded",
                version: nil, path: nil, errorCode: nil, attempts: 1, firstFailedAt: nil)
        }
    }

    /// Records a failed job, unless the ledger already holds a success for it.
    func recordFailure(
        jobID: String, userID: UUID, requestedAt: Date, errorCode: String, attempts: Int, firstFailedAt: Date
    ) throws {
        try client.withConnection { connection in
            try record(
                connection, jobID: jobID, userID: userID, requestedAt: requestedAt, status: "failed",
                version: nil, path: nil, errorCode: errorCode, attempts: attempts, firstFailedAt: firstFailedAt)
        }
    }

    /// Writes the job's ledger row; false when the ledger already holds a success for it
    /// (which is never overwritten).
    @discardableResult
    private func record(
        _ connection: PostgresConnection, jobID: String, userID: UUID, requestedAt: Date, status: String,
        version: Int64?, path: String?, errorCode: String?, attempts: Int, firstFailedAt: Date?
    ) throws -> Bool {
        try !connection.query(
            """
            INSERT INTO avatar_crop_jobs
                (job_id, user_id, status, requested_at, avatar_version, avatar_path, error_code, attempts,
                 first_failed_at, finished_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now())
            ON CONFLICT (job_id) DO UPDATE
               SET status = EXCLUDED.status, avatar_version = EXCLUDED.avatar_version,
                   avatar_path = EXCLUDED.avatar_path, error_code = EXCLUDED.error_code,
                   attempts = EXCLUDED.attempts,
                   first_failed_at = COALESCE(avatar_crop_jobs.first_failed_at, EXCLUDED.first_failed_at),
                   finished_at = now()
             WHERE avatar_crop_jobs.status <> 'succeeded'
            RETURNING job_id
            """,
            [
                .text(jobID), .uuid(userID), .text(status), .timestamp(requestedAt),
                version.map { .int($0) } ?? .null, path.map { .text($0) } ?? .null,
                errorCode.map { .text($0) } ?? .null, .int(Int64(attempts)),
                firstFailedAt.map { .timestamp($0) } ?? .null,
            ]
        ).rows.isEmpty
    }
}
