import Foundation
import TestEnvironment
import Testing

@testable import Database

@Suite(.requires(.database)) struct MigrationIntegrationTests {
    private func columns(_ connection: PostgresConnection, _ schema: String, _ table: String) throws -> [String] {
        try connection.query(
            """
            SELECT column_name FROM information_schema.columns
            WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position
            """,
            [.text(schema), .text(table)]
        ).rows.map { try #require(try $0.text("column_name")) }
    }

    @Test func freshSchemaGetsEveryMigrationInOrderOnce() throws {
        try TestDatabase.withSchema { configuration, schema in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            let migrator = try TestDatabase.migrator()
            // Every migration of the repository, in order.
            let all = Array(1...migrator.migrations.count)
            #expect(all.count >= 6)
            #expect(try migrator.pending(connection).map(\.version) == all)

            let applied = try migrator.migrate(connection)
            #expect(applied.map(\.version) == all)

            let recorded = try connection.query("SELECT version, name, checksum, applied_at FROM schema_migrations")
            #expect(try recorded.rows.map { try $0.int("version") } == all.map(Int64.init))
            #expect(try recorded.rows.map { try $0.text("checksum") } == migrator.migrations.map(\.checksum))
            #expect(try recorded.rows.allSatisfy { try $0.timestamp("applied_at") != nil })

            #expect(
                try columns(connection, schema, "profiles") == [
                    "id", "created_at", "avatar_path", "avatar_version", "avatar_blurhash", "avatar_updated_at",
                    "avatar_requested_at",
                ])
            #expect(
                try columns(connection, schema, "avatar_crop_jobs") == [
                    "job_id", "user_id", "status", "requested_at", "avatar_version", "avatar_path", "error_code",
                    "attempts", "first_failed_at", "finished_at", "avatar_sha256", "rendition_paths",
                    "render_attempts", "started_at",
                ])
            let index = try connection.query(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = $2",
                [.text(schema), .text("avatar_crop_jobs_user_requested_idx")]
            )
            #expect(try index.rows.first?.text("indexdef")?.contains("(user_id, requested_at DESC)") == true)

            // Running again changes nothing.
            #expect(try migrator.migrate(connection).isEmpty)
            #expect(try migrator.pending(connection).isEmpty)
            #expect(
                try connection.query("SELECT count(*) AS n FROM schema_migrations").rows.first?.int("n")
                    == Int64(all.count))
        }
    }

    /// Migration 0006 pins the search_path of 0005's functions to the schema they were created in
    /// (then pg_catalog, then pg_temp), and 0007, 0009 and 0011 their own (forget, prune; the tombstone's checks)
    /// alike: a caller's temporary table named like theirs no longer shadows the real one. pg_temp is
    /// searched first unless a path names it.
    @Test func publicationFunctionsIgnoreTheCallersTemporaryTables() throws {
        try TestDatabase.withSchema { configuration, schema in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            try TestDatabase.migrator().migrate(connection)
            let settings = try connection.query(
                """
                SELECT p.proname, array_to_string(p.proconfig, ';') AS config FROM pg_proc p
                JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = $1
                  AND p.proname IN ('avatar_lock_user', 'avatar_publish', 'avatar_forget', 'avatar_prune',
                                    'avatar_user_lock_key', 'avatar_forgotten', 'avatar_job_forgotten',
                                    'avatar_start', 'avatar_record', 'avatar_hmac_sha256', 'avatar_user_key')
                ORDER BY p.proname
                """, [.text(schema)])
            #expect(
                try settings.rows.map { try $0.text("config") }
                    == Array(
                        repeating: "search_path=\(schema), pg_catalog, pg_temp", count: 12))

            try connection.query("CREATE TEMPORARY TABLE profiles (LIKE \(schema).profiles INCLUDING ALL)")
            let user = UUID()
            let published = try connection.query(
                "SELECT avatar_publish($1, $2, now(), 0, 'users/x/avatar_512.png', '{}'::text[], 'ab', NULL) AS v",
                [.text("job-temp"), .uuid(user)])
            #expect(try published.rows.first?.int("v") == 1)
            let real = try connection.query(
                "SELECT avatar_version FROM \(schema).profiles WHERE id = $1", [.uuid(user)])
            #expect(try real.rows.first?.int("avatar_version") == 1)
            let shadow = try connection.query("SELECT count(*) AS n FROM pg_temp.profiles")
            #expect(try shadow.rows.first?.int("n") == 0)

            // The forget resets the real profile, not the temporary one.
            try connection.query("INSERT INTO pg_temp.profiles (id, avatar_version) VALUES ($1, 7)", [.uuid(user)])
            try connection.query("SELECT avatar_forget($1, now())", [.uuid(user)])
            let forgotten = try connection.query(
                "SELECT count(*) AS n FROM \(schema).profiles WHERE id = $1 AND avatar_version > 0", [.uuid(user)])
            #expect(try forgotten.rows.first?.int("n") == 0)
            let untouched = try connection.query(
                "SELECT avatar_version FROM pg_temp.profiles WHERE id = $1", [.uuid(user)])
            #expect(try untouched.rows.first?.int("avatar_version") == 7)
        }
    }

    @Test func ledgerRejectsUnknownStatus() throws {
        try TestDatabase.withSchema { configuration, _ in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            try TestDatabase.migrator().migrate(connection)
            let insert = """
                INSERT INTO avatar_crop_jobs (job_id, user_id, status, requested_at) VALUES ($1, $2, $3, $4)
                """
            let row = try connection.query(
                insert + " RETURNING attempts, finished_at",
                [.text("job-1"), .uuid(UUID()), .text("succeeded"), .timestamp(Date())]
            ).rows.first
            #expect(try row?.int("attempts") == 1)
            #expect(try row?.timestamp("finished_at") != nil)
            #expect {
                try connection.query(insert, [.text("job-2"), .uuid(UUID()), .text("running"), .timestamp(Date())])
            } throws: { error in
                (error as? DatabaseError)?.sqlState == .checkViolation
            }
        }
    }

    @Test func existingAppProfilesKeepTheirRowsAndGainAvatarColumns() throws {
        try TestDatabase.withSchema { configuration, schema in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            try connection.query("CREATE TABLE profiles (id uuid PRIMARY KEY, display_name text)")
            let alice = UUID()
            let bob = UUID()
            try connection.query(
                "INSERT INTO profiles (id, display_name) VALUES ($1, 'Alice'), ($2, 'Bob')",
                [.uuid(alice), .uuid(bob)]
            )

            try TestDatabase.migrator().migrate(connection)

            #expect(
                try columns(connection, schema, "profiles") == [
                    "id", "display_name", "avatar_path", "avatar_version", "avatar_blurhash", "avatar_updated_at",
                    "avatar_requested_at",
                ])
            let rows = try connection.query(
                "SELECT id, display_name, avatar_version, avatar_path FROM profiles ORDER BY display_name"
            ).rows
            #expect(try rows.map { try $0.uuid("id") } == [alice, bob])
            #expect(try rows.map { try $0.text("display_name") } == ["Alice", "Bob"])
            #expect(try rows.map { try $0.int("avatar_version") } == [0, 0])
            #expect(try rows.map { try $0.text("avatar_path") } == [nil, nil])
        }
    }

    @Test func changedAppliedMigrationIsAnError() throws {
        try TestDatabase.withSchema { configuration, _ in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            let migrator = try TestDatabase.migrator()
            try migrator.migrate(connection)

            var edited = migrator.migrations
            edited[1] = Migration(version: 2, name: edited[1].name, sql: edited[1].sql + "\n-- edited\n")
            let tampered = Migrator(migrations: edited, logger: TestDatabase.logger)
            do {
                try tampered.migrate(connection)
                Issue.record("an edited applied migration was accepted")
            } catch let error as DatabaseError {
                #expect(error.code == .migration)
                #expect(error.message.contains("was changed"))
            }
            #expect(throws: DatabaseError.self) { try tampered.pending(connection) }
        }
    }

    @Test func failingMigrationLeavesNothingOfItselfBehind() throws {
        try TestDatabase.withSchema { configuration, _ in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            let migrator = Migrator(
                migrations: [
                    Migration(version: 1, name: "good", sql: "CREATE TABLE good (x int);"),
                    Migration(version: 2, name: "bad", sql: "CREATE TABLE half (x int);\nSELEC broken;"),
                ],
                logger: TestDatabase.logger
            )
            do {
                try migrator.migrate(connection)
                Issue.record("a broken migration was applied")
            } catch let error as DatabaseError {
                #expect(error.code == .migration)
                #expect(error.sqlState == .syntaxError)
                #expect(error.message.contains("migration 2 (bad)"))
            }
            #expect(try migrator.pending(connection).map(\.version) == [2])
            #expect(try connection.query("SELECT to_regclass('good') IS NOT NULL AS t").rows.first?.bool("t") == true)
            #expect(try connection.query("SELECT to_regclass('half') IS NULL AS t").rows.first?.bool("t") == true)
        }
    }

    @Test func workersMigratingAtOnceApplyEachMigrationOnce() throws {
        try TestDatabase.withSchema { configuration, _ in
            let migrator = try TestDatabase.migrator()
            let applied = try concurrently(4) { _ in
                let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
                return try migrator.migrate(connection).map(\.version)
            }
            #expect(applied.flatMap { $0 }.sorted() == Array(1...migrator.migrations.count))
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            #expect(
                try connection.query("SELECT count(*) AS n FROM schema_migrations").rows.first?.int("n")
                    == Int64(migrator.migrations.count))
        }
    }

    @Test func noTransactionMigrationRunsStatementByStatement() throws {
        try TestDatabase.withSchema { configuration, schema in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            let migrator = Migrator(
                migrations: [
                    Migration(version: 1, name: "table", sql: "CREATE TABLE big (id int, at timestamptz);"),
                    Migration(
                        version: 2, name: "index",
                        sql: Migration.noTransactionMarker + """

                            -- a comment line
                            DROP INDEX CONCURRENTLY IF EXISTS big_at_idx;
                            CREATE INDEX CONCURRENTLY big_at_idx
                                ON big (at);
                            """),
                ], logger: TestDatabase.logger)
            #expect(!migrator.migrations[1].runsInTransaction)
            #expect(migrator.migrations[1].statements.count == 2)
            #expect(try migrator.migrate(connection).map(\.version) == [1, 2])
            let index = try connection.query(
                "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)", [.text(schema + ".big_at_idx")])
            #expect(try index.rows.first?.bool("indisvalid") == true)
            #expect(try migrator.migrate(connection).isEmpty)
        }
    }

    /// Migration 0012 (docs/DATA.md, window 8): the tombstones kept by raw user id until 0011 are rewritten as
    /// HMAC-SHA256 of the id under the migrating session's key, and the table keeps no id; a `migrate` without a
    /// key, with tombstones to rewrite, fails and leaves them as they were.
    @Test func tombstonesAreRewrittenKeyed() throws {
        try TestDatabase.withSchema { configuration, schema in
            var keyless = configuration
            keyless.startupSettings = [:]
            let unkeyed = try PostgresConnection.connect(keyless, logger: TestDatabase.logger)
            let all = try TestDatabase.migrator()
            try Migrator(migrations: all.migrations.filter { $0.version < 12 }, logger: TestDatabase.logger)
                .migrate(unkeyed)
            try unkeyed.query(
                "INSERT INTO avatar_forgotten_users (user_id, forgotten_at) VALUES ($1, now())",
                [.uuid(Self.keyedUser)])
            #expect(throws: DatabaseError.self) { try all.migrate(unkeyed) }
            #expect(try columns(unkeyed, schema, "avatar_forgotten_users").contains("user_id"))

            let keyed = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            #expect(try all.migrate(keyed).map(\.version) == [12])
            #expect(
                try columns(keyed, schema, "avatar_forgotten_users") == ["user_key", "forgotten_at", "recorded_at"])
            let keys = try keyed.query("SELECT encode(user_key, 'hex') AS k FROM avatar_forgotten_users").rows
                .map { try $0.text("k") }
            #expect(keys == [Self.keyedUserTombstone])
            let covered = try keyed.query(
                "SELECT avatar_forgotten($1, now() - interval '1 hour') AS f", [.uuid(Self.keyedUser)])
            #expect(try covered.rows.first?.bool("f") == true)
        }
    }

    /// A user id and its tombstone under `TestService.tombstoneKey`: HMAC-SHA256(key, the id's lower-case text),
    /// computed apart (Python's `hmac`), so the database's HMAC is checked against the standard's.
    static let keyedUser = UUID(uuidString: "5A1C0B9E-3F4D-4E8A-9B2C-7D6E5F4A3B21")!
    static let keyedUserTombstone = "42636e5d90c112bf77ecd89e2699f9bba213a87b4baecd679bcec0e874052985"
}
