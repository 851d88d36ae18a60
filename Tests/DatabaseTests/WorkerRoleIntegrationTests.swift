import Foundation
import TestEnvironment
import Testing

@testable import Database

/// The `avatar_worker` role of migration 0003, exercised with SET LOCAL ROLE inside transactions.
@Suite(.requires(.database)) struct WorkerRoleIntegrationTests {
    /// A schema with an app-owned `profiles` (with a private column) and all migrations applied.
    private func withMigratedAppSchema(_ body: (PostgresConnection) throws -> Void) throws {
        try TestDatabase.withSchema { configuration, _ in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            try connection.query("CREATE TABLE profiles (id uuid PRIMARY KEY, display_name text)")
            try TestDatabase.migrator().migrate(connection)
            try body(connection)
        }
    }

    private func asWorker<T>(_ connection: PostgresConnection, _ body: (PostgresConnection) throws -> T) throws -> T {
        try connection.transaction { connection in
            try connection.query("SET LOCAL ROLE avatar_worker")
            return try body(connection)
        }
    }

    private func expectRefused(_ connection: PostgresConnection, _ sql: String, _ parameters: [PostgresValue] = []) {
        do {
            _ = try asWorker(connection) { try $0.query(sql, parameters) }
            Issue.record("avatar_worker was allowed: \(sql)")
        } catch let error as PostgresTransactionError {
            #expect(error.sqlState == .insufficientPrivilege, "\(sql): \(error)")
        } catch {
            Issue.record("unexpected error for \(sql): \(error)")
        }
    }

    @Test func workerCanDoItsJob() throws {
        try withMigratedAppSchema { connection in
            let user = UUID()
            let requestedAt = Date(timeIntervalSince1970: 1_718_000_000)
            let version = try asWorker(connection) { connection -> Int64? in
                try connection.query("INSERT INTO profiles (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", [.uuid(user)])
                let updated = try connection.query(
                    """
                    UPDATE profiles
                    SET avatar_path = $2, avatar_version = avatar_version + 1, avatar_blurhash = $3,
                        avatar_updated_at = now(), avatar_requested_at = $4
                    WHERE id = $1 AND (avatar_requested_at IS NULL OR avatar_requested_at <= $4)
                    RETURNING avatar_version
                    """,
                    [.uuid(user), .text("users/x/avatar_512.png"), .text("LEHV6nWB2yk8"), .timestamp(requestedAt)]
                )
                try connection.query(
                    """
                    INSERT INTO avatar_crop_jobs (job_id, user_id, status, requested_at, avatar_version, avatar_path)
                    VALUES ($1, $2, 'succeeded', $3, $4, $5)
                    """,
                    [.text("job-1"), .uuid(user), .timestamp(requestedAt), .int(1), .text("users/x/avatar_512.png")]
                )
                try connection.query(
                    "UPDATE avatar_crop_jobs SET attempts = attempts + 1 WHERE job_id = $1",
                    [
                        .text("job-1")
                    ])
                let status = try connection.query(
                    "SELECT status, attempts FROM avatar_crop_jobs WHERE job_id = $1 AND user_id = $2",
                    [.text("job-1"), .uuid(user)]
                ).rows.first
                #expect(try status?.text("status") == "succeeded")
                #expect(try status?.int("attempts") == 2)
                let profile = try connection.query(
                    "SELECT avatar_path, avatar_version, avatar_requested_at FROM profiles WHERE id = $1",
                    [.uuid(user)]
                ).rows.first
                #expect(try profile?.text("avatar_path") == "users/x/avatar_512.png")
                return try updated.rows.first?.int("avatar_version")
            }
            #expect(version == 1)
        }
    }

    /// Migration 0005's calls run with the worker's own rights (SECURITY INVOKER) and those suffice.
    @Test func workerCanCallThePublicationFunctions() throws {
        try withMigratedAppSchema { connection in
            let user = UUID()
            let version = try asWorker(connection) { connection -> Int64? in
                try connection.query("SELECT avatar_lock_user(1, 2, 1000)")
                let published = try connection.query(
                    "SELECT avatar_publish($1, $2, now(), 0, 'users/x/avatar_512.png', '{}'::text[], 'ab', NULL) AS v",
                    [.text("job-f"), .uuid(user)])
                try connection.query("SELECT pg_advisory_unlock(1, 2)")
                return try published.rows.first?.int("v")
            }
            #expect(version == 1)
        }
    }

    /// Migration 0007's calls with the worker's rights: a forget resets the avatar columns of the app's own
    /// `profiles` row (never deletes it, nor touches its other columns), and the prune runs.
    @Test func workerCanForgetAndPrune() throws {
        try withMigratedAppSchema { connection in
            let user = UUID()
            try connection.query("INSERT INTO profiles (id, display_name) VALUES ($1, 'Alice')", [.uuid(user)])
            let erased = try asWorker(connection) { connection -> Int64? in
                try connection.query(
                    "SELECT avatar_publish($1, $2, now(), 0, 'users/x/avatar_512.png', '{}'::text[], 'ab', NULL) AS v",
                    [.text("job-g"), .uuid(user)])
                let erased = try connection.query("SELECT avatar_forget($1, now()) AS n", [.uuid(user)])
                try connection.query("SELECT avatar_prune(now(), 10)")
                return try erased.rows.first?.int("n")
            }
            #expect(erased == 1)
            let row = try connection.query(
                "SELECT display_name, avatar_version, avatar_path FROM profiles WHERE id = $1", [.uuid(user)]
            ).rows.first
            #expect(try row?.text("display_name") == "Alice")
            #expect(try row?.int("avatar_version") == 0)
            #expect(try row?.text("avatar_path") == nil)
        }
    }

    /// Migration 0009's calls with the worker's rights: a job's start and its failure are written, and after the
    /// user's forget neither writes anything (the job's row goes); tombstones outlive the prune.
    @Test func workerStartsAndRecordsJobsUnlessForgotten() throws {
        try withMigratedAppSchema { connection in
            let user = UUID()
            let (started, recorded, afterForget, rows, tombstones) = try asWorker(connection) {
                connection -> (Int64?, Bool, Int64?, Int64?, Int64?) in
                let started = try connection.query(
                    "SELECT avatar_start('job-s', $1, now() - interval '1 minute') AS n", [.uuid(user)]
                ).rows.first?.int("n")
                let recorded = try connection.query(
                    """
                    SELECT avatar_record('job-r', $1, now() - interval '1 minute', 'failed', 'TOO_SMALL', 1, now())
                           IS NOT NULL AS written
                    """, [.uuid(user)]
                ).rows.first?.bool("written")
                try connection.query("SELECT avatar_forget($1, now())", [.uuid(user)])
                let afterForget = try connection.query(
                    "SELECT avatar_start('job-s', $1, now() - interval '1 minute') AS n", [.uuid(user)]
                ).rows.first?.int("n")
                try connection.query(
                    "SELECT avatar_record('job-r', $1, now() - interval '1 minute', 'failed', 'TOO_SMALL', 1, now())",
                    [.uuid(user)])
                try connection.query("SELECT avatar_prune(now() + interval '1 day', 10)")
                let rows = try connection.query(
                    "SELECT count(*) AS n FROM avatar_crop_jobs WHERE user_id = $1", [.uuid(user)]
                ).rows.first?.int("n")
                let tombstones = try connection.query(
                    "SELECT count(*) AS n FROM avatar_forgotten_users WHERE user_key = avatar_user_key($1)",
                    [.uuid(user)]
                ).rows.first?.int("n")
                return (started, recorded == true, afterForget, rows, tombstones)
            }
            #expect(started == 1)
            #expect(recorded)
            #expect(afterForget == nil, "a start after the forget is refused")
            #expect(rows == 0)
            #expect(tombstones == 1)
        }
    }

    /// Migration 0011: the forget with the accepted clock skew covers a request stamped within it after the forget
    /// (a producer whose clock runs ahead), one stamped past it is a later request; the pending forgets, with the
    /// worker's rights.
    @Test func workerForgetCoversTheClockSkewAndRecordsPendingForgets() throws {
        try withMigratedAppSchema { connection in
            let user = UUID()
            let (within, beyond, pending) = try asWorker(connection) { connection -> (Bool?, Bool?, Int64?) in
                try connection.query(
                    """
                    INSERT INTO avatar_pending_forgets (user_id, requested_at, due_at) VALUES ($1, now(), now())
                    ON CONFLICT (user_id) DO UPDATE SET attempts = avatar_pending_forgets.attempts + 1
                    """, [.uuid(user)])
                try connection.query("SELECT avatar_forget($1, now(), 300)", [.uuid(user)])
                let within = try connection.query(
                    "SELECT avatar_forgotten($1, now() + interval '200 s') AS f", [.uuid(user)]
                ).rows.first?.bool("f")
                let beyond = try connection.query(
                    "SELECT avatar_forgotten($1, now() + interval '400 s') AS f", [.uuid(user)]
                ).rows.first?.bool("f")
                try connection.query("DELETE FROM avatar_pending_forgets WHERE user_id = $1", [.uuid(user)])
                let pending = try connection.query("SELECT count(*) AS n FROM avatar_pending_forgets").rows.first?
                    .int("n")
                return (within, beyond, pending)
            }
            #expect(within == true, "a request stamped 200 s ahead is covered")
            #expect(beyond == false, "one stamped past the skew is a later request")
            #expect(pending == 0)
            expectRefused(connection, "TRUNCATE avatar_pending_forgets")
        }
    }

    /// Migration 0011, window 8: with the session's maximum request age a request older than it counts as covered
    /// (superseded, no row) and tombstones older than it can go; without it nothing changes.
    @Test func maxRequestAgeCoversOldRequestsAndLetsTombstonesGo() throws {
        try withMigratedAppSchema { connection in
            let user = UUID()
            let (unset, old, recent, started) = try asWorker(connection) {
                connection -> (Bool?, Bool?, Bool?, Int64?) in
                // Whether a request `days` old counts as covered.
                let covered = { (days: Int64) in
                    try connection.query(
                        "SELECT avatar_forgotten($1, now() - make_interval(days => $2::int4)) AS f",
                        [.uuid(user), .int(days)]
                    ).rows.first?.bool("f")
                }
                let unset = try covered(30)
                try connection.query("SELECT set_config('avatar.max_request_age', '336 hours', true)")
                let (old, recent) = (try covered(15), try covered(13))
                let started = try connection.query(
                    "SELECT avatar_start('job-old', $1, now() - interval '15 days') AS n", [.uuid(user)]
                ).rows.first?.int("n")
                return (unset, old, recent, started)
            }
            #expect(unset == false, "no limit without the setting")
            #expect(old == true, "older than the maximum age: covered")
            #expect(recent == false)
            #expect(started == nil, "a too-old job's render does not start")
        }
    }

    /// Migration 0010: the deferred source deletions (`SourceDeletionQueue`'s statements) with the worker's rights.
    @Test func workerCanRecordAndSweepSourceDeletions() throws {
        try withMigratedAppSchema { connection in
            let due = try asWorker(connection) { connection -> Int in
                for _ in 0..<2 {
                    try connection.query(
                        """
                        INSERT INTO avatar_source_deletions (source_key, user_id, due_at)
                        VALUES ($1, $2, now() - interval '1 s')
                        ON CONFLICT (source_key) DO UPDATE SET due_at = greatest(avatar_source_deletions.due_at, EXCLUDED.due_at)
                        """, [.text("uploads/a.jpg"), .uuid(UUID())])
                }
                try connection.query(
                    "UPDATE avatar_source_deletions SET due_at = greatest(due_at, now()) WHERE source_key = $1",
                    [.text("uploads/a.jpg")])
                let due = try connection.query(
                    "SELECT source_key FROM avatar_source_deletions WHERE due_at <= now() LIMIT 10 FOR UPDATE SKIP LOCKED"
                ).rows.count
                try connection.query(
                    "DELETE FROM avatar_source_deletions WHERE source_key = $1", [.text("uploads/a.jpg")])
                return due
            }
            #expect(due == 1)
            expectRefused(connection, "TRUNCATE avatar_source_deletions")
        }
    }

    @Test func workerIsRefusedEverythingElse() throws {
        try withMigratedAppSchema { connection in
            let user = UUID()
            try connection.query("INSERT INTO profiles (id, display_name) VALUES ($1, 'Alice')", [.uuid(user)])
            expectRefused(connection, "DELETE FROM profiles")
            expectRefused(connection, "UPDATE profiles SET display_name = 'Mallory' WHERE id = $1", [.uuid(user)])
            expectRefused(connection, "SELECT display_name FROM profiles")
            expectRefused(connection, "SELECT * FROM profiles")
            expectRefused(connection, "INSERT INTO profiles (id, display_name) VALUES ($1, 'x')", [.uuid(UUID())])
            expectRefused(connection, "TRUNCATE avatar_crop_jobs")
            expectRefused(connection, "DROP TABLE avatar_crop_jobs")
            expectRefused(connection, "CREATE TABLE sneaky (x int)")
            expectRefused(connection, "DELETE FROM schema_migrations")
            // The app's data is untouched.
            let row = try connection.query("SELECT display_name FROM profiles WHERE id = $1", [.uuid(user)]).rows.first
            #expect(try row?.text("display_name") == "Alice")
        }
    }

    /// Migration 0012, window 8: the worker's forget keeps HMAC-SHA256(key, id) and no id; a session without the
    /// key can neither record a tombstone nor look one up (AV004), so nothing is kept or missed unkeyed.
    @Test func tombstonesAreKeyedHashesAndNeedTheKey() throws {
        try withMigratedAppSchema { connection in
            let user = MigrationIntegrationTests.keyedUser
            let keys = try asWorker(connection) { connection in
                try connection.query("SELECT avatar_forget($1, now(), 300)", [.uuid(user)])
                return try connection.query("SELECT encode(user_key, 'hex') AS k FROM avatar_forgotten_users").rows
                    .map { try $0.text("k") }
            }
            #expect(keys == [MigrationIntegrationTests.keyedUserTombstone])
            let identifying = try connection.query(
                """
                SELECT count(*) AS n FROM information_schema.columns
                 WHERE table_schema = current_schema() AND table_name = 'avatar_forgotten_users' AND data_type = 'uuid'
                """)
            #expect(try identifying.rows.first?.int("n") == 0)
            for sql in ["SELECT avatar_forget($1, now(), 300)", "SELECT avatar_forgotten($1, now())"] {
                do {
                    _ = try asWorker(connection) { connection in
                        try connection.query("SELECT set_config('avatar.tombstone_key', '', true)")
                        return try connection.query(sql, [.uuid(UUID())])
                    }
                    Issue.record("ran without a tombstone key: \(sql)")
                } catch let error as PostgresTransactionError {
                    #expect(error.sqlState == SQLState(rawValue: "AV004"), "\(sql): \(error)")
                }
            }
        }
    }
}
