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

    /// Cheap read before fetching and rendering, so a duplicate or stale request neither
    /// renders nor overwrites the stored avatar.
    func precheck(jobID: String, userID: UUID, requestedAt: Date) throws -> Precheck {
        try client.withConnection { connection in
            let job = try connection.query(
                "SELECT status, avatar_version, avatar_path FROM avatar_crop_jobs WHERE job_id = $1",
                [.text(jobID)])
            if let row = job.rows.first, try row.text("status") == "succeeded" {
                return .alreadySucceeded(version: try row.int("avatar_version") ?? 0, path: try row.text("avatar_path"))
            }
            let profile = try connection.query(
                "SELECT avatar_requested_at FROM profiles WHERE id = $1", [.uuid(userID)])
            if let current = try profile.rows.first?.timestamp("avatar_requested_at"), current > requestedAt {
                return .superseded
            }
            return .proceed
        }
    }

    /// Publishes the uploaded avatar: bumps `avatar_version`, sets the path and records the
    /// job as succeeded, all in one transaction, re-checking duplicates and ordering under
    /// row locks (another worker may have raced us during a rebalance).
    func apply(
        jobID: String, userID: UUID, requestedAt: Date, path: String, blurHash: String?, attempts: Int
    ) throws -> Applied {
        try client.withConnection { connection in
            try connection.transaction { tx in
                let job = try tx.query(
                    "SELECT status, avatar_version, avatar_path FROM avatar_crop_jobs WHERE job_id = $1 FOR UPDATE",
                    [.text(jobID)])
                if let row = job.rows.first, try row.text("status") == "succeeded" {
                    return .alreadySucceeded(version: try row.int("avatar_version") ?? 0, path: try row.text("avatar_path"))
                }
                try tx.query("INSERT INTO profiles (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", [.uuid(userID)])
                let profile = try tx.query(
                    "SELECT avatar_requested_at FROM profiles WHERE id = $1 FOR UPDATE", [.uuid(userID)])
                if let current = try profile.rows.first?.timestamp("avatar_requested_at"), current > requestedAt {
                    try record(tx, jobID: jobID, userID: userID, requestedAt: requestedAt, status: "superseded",
                               version: nil, path: nil, errorCode: nil, attempts: attempts, firstFailedAt: nil)
                    return .superseded
                }
                let updated = try tx.query(
                    """
                    UPDATE profiles
                       SET avatar_path = $2, avatar_version = avatar_version + 1, avatar_blurhash = $3,
                           avatar_updated_at = now(), avatar_requested_at = $4
                     WHERE id = $1
                    RETURNING avatar_version
                    """,
                    [.uuid(userID), .text(path), blurHash.map { .text($0) } ?? .null, .timestamp(requestedAt)])
                guard let version = try updated.rows.first?.int("avatar_version") else {
                    throw JobFailure(.internal, detail: "profile row missing after insert")
                }
                try record(tx, jobID: jobID, userID: userID, requestedAt: requestedAt, status: "succeeded",
                           version: version, path: path, errorCode: nil, attempts: attempts, firstFailedAt: nil)
                return .published(version: version)
            }
        }
    }

    /// Records a job that found a newer avatar already published.
    func recordSuperseded(jobID: String, userID: UUID, requestedAt: Date) throws {
        try client.withConnection { connection in
            try record(connection, jobID: jobID, userID: userID, requestedAt: requestedAt, status: "superseded",
                       version: nil, path: nil, errorCode: nil, attempts: 1, firstFailedAt: nil)
        }
    }

    /// Records a failed job, unless the ledger already holds a success for it.
    func recordFailure(
        jobID: String, userID: UUID, requestedAt: Date, errorCode: String, attempts: Int, firstFailedAt: Date
    ) throws {
        try client.withConnection { connection in
            try record(connection, jobID: jobID, userID: userID, requestedAt: requestedAt, status: "failed",
                       version: nil, path: nil, errorCode: errorCode, attempts: attempts, firstFailedAt: firstFailedAt)
        }
    }

    private func record(
        _ connection: PostgresConnection, jobID: String, userID: UUID, requestedAt: Date, status: String,
        version: Int64?, path: String?, errorCode: String?, attempts: Int, firstFailedAt: Date?
    ) throws {
        try connection.query(
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
            """,
            [
                .text(jobID), .uuid(userID), .text(status), .timestamp(requestedAt),
                version.map { .int($0) } ?? .null, path.map { .text($0) } ?? .null,
                errorCode.map { .text($0) } ?? .null, .int(Int64(attempts)),
                firstFailedAt.map { .timestamp($0) } ?? .null,
            ])
    }
}
