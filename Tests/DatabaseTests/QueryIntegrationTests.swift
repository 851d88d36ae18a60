import Foundation
import TestEnvironment
import Testing

@testable import Database

@Suite(.requires(.database)) struct QueryIntegrationTests {
    @Test func everyParameterTypeRoundTripsThroughATable() throws {
        try TestDatabase.withSchema { configuration, _ in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            try connection.query(
                """
                CREATE TABLE all_types (
                    id int PRIMARY KEY, t text, i bigint, d double precision, b boolean, by bytea, u uuid,
                    ts timestamptz, n text
                )
                """
            )
            let uuid = UUID()
            let date = Date(timeIntervalSince1970: 1_718_000_000.123456)
            let bytes: [UInt8] = [0, 1, 0x27, 0x5c, 0x3b, 0xff]
            let tricky = "Robert'); DROP TABLE all_types; -- ; \\x00 \"quoted\" $1 ü 🙂"
            let inserted = try connection.query(
                "INSERT INTO all_types (id, t, i, d, b, by, u, ts, n) VALUES (1, $1, $2, $3, $4, $5, $6, $7, $8)",
                [
                    .text(tricky), .int(.min), .double(-1234.5e-7), .bool(true), .bytes(bytes), .uuid(uuid),
                    .timestamp(date), .null,
                ]
            )
            #expect(inserted.affectedRows == 1)

            let row = try #require(try connection.query("SELECT * FROM all_types WHERE id = $1", [.int(1)]).rows.first)
            #expect(try row.text("t") == tricky)
            #expect(try row.int("i") == .min)
            #expect(try row.double("d") == -1234.5e-7)
            #expect(try row.bool("b") == true)
            #expect(try row.bytes("by") == bytes)
            #expect(try row.uuid("u") == uuid)
            let stored = try #require(try row.timestamp("ts"))
            #expect(abs(stored.timeIntervalSince(date)) < 1e-6)
            #expect(try row.text("n") == nil)
            #expect(try row.isNull("n"))
            // By index, in the table's column order.
            #expect(try row.int(0) == 1)
            #expect(try row.text(1) == tricky)
            #expect(row.columnNames == ["id", "t", "i", "d", "b", "by", "u", "ts", "n"])
            // The injection attempt was stored as data: the table is still there.
            #expect(try connection.query("SELECT count(*) AS n FROM all_types").rows.first?.int("n") == 1)
        }
    }

    @Test func parametersAreTypedWithoutCasts() throws {
        let connection = try TestDatabase.connectAdmin()
        let row = try #require(
            try connection.query(
                """
                SELECT pg_typeof($1)::text AS t, pg_typeof($2)::text AS i, pg_typeof($3)::text AS d,
                       pg_typeof($4)::text AS b, pg_typeof($5)::text AS y, pg_typeof($6)::text AS u,
                       pg_typeof($7)::text AS ts, $8 AS nothing, $9 AS nan, $10 AS inf, $11 AS neg_zero
                """,
                [
                    .text("x"), .int(1), .double(1), .bool(false), .bytes([]), .uuid(UUID()), .timestamp(Date()), .null,
                    .double(.nan), .double(-.infinity), .double(-0.0),
                ]
            ).rows.first
        )
        #expect(try row.text("t") == "text")
        #expect(try row.text("i") == "bigint")
        #expect(try row.text("d") == "double precision")
        #expect(try row.text("b") == "boolean")
        #expect(try row.text("y") == "bytea")
        #expect(try row.text("u") == "uuid")
        #expect(try row.text("ts") == "timestamp with time zone")
        #expect(try row.text("nothing") == nil)
        #expect(try row.double("nan")?.isNaN == true)
        #expect(try row.double("inf") == -.infinity)
        #expect(try row.double("neg_zero")?.sign == .minus)
    }

    @Test func injectionAttemptInAComparisonMatchesNothing() throws {
        let connection = try TestDatabase.connectAdmin()
        let result = try connection.query(
            "SELECT 1 AS one WHERE 'admin' = $1",
            [.text("x' OR '1'='1")]
        )
        #expect(result.rows.isEmpty)
    }

    @Test func uniqueViolationHasATypedSQLState() throws {
        try TestDatabase.withSchema { configuration, _ in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            try connection.query("CREATE TABLE notes (id text PRIMARY KEY)")
            try connection.query("INSERT INTO notes (id) VALUES ($1)", [.text("user-secret-7")])
            do {
                try connection.query("INSERT INTO notes (id) VALUES ($1)", [.text("user-secret-7")])
                Issue.record("inserted a duplicate key")
            } catch let error as DatabaseError {
                #expect(error.code == .queryFailed)
                #expect(error.sqlState == .uniqueViolation)
                #expect(!error.isTransient)
                #expect(error.constraintName == "notes_pkey")
                #expect(error.tableName == "notes")
                #expect(error.query == "INSERT INTO notes (id) VALUES ($1)")
                #expect(!error.description.contains("user-secret-7"))
                #expect(error.debugDescription.contains("user-secret-7"))
            }
            #expect(connection.isHealthy)
        }
    }

    @Test func otherServerErrorsAreTyped() throws {
        try TestDatabase.withSchema { configuration, _ in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            #expect {
                try connection.query("SELECT * FROM no_such_table")
            } throws: { error in
                (error as? DatabaseError)?.sqlState == .undefinedTable
            }
            #expect {
                try connection.query("SELECT $1::uuid", [.text("not-a-uuid")])
            } throws: { error in
                guard let error = error as? DatabaseError else { return false }
                return error.sqlState == .invalidTextRepresentation && !error.description.contains("not-a-uuid")
            }
        }
    }

    @Test func affectedRowsAndDecodingErrors() throws {
        try TestDatabase.withSchema { configuration, _ in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            try connection.query("CREATE TABLE items (id int PRIMARY KEY, label text)")
            let insert = try connection.query("INSERT INTO items VALUES (1, 'a'), (2, 'b'), (3, 'c')")
            #expect(insert.affectedRows == 3)
            #expect(insert.commandTag == "INSERT 0 3")
            let update = try connection.query("UPDATE items SET label = $1 WHERE id >= $2", [.text("z"), .int(2)])
            #expect(update.affectedRows == 2)
            #expect(update.rows.isEmpty)

            let row = try #require(try connection.query("SELECT id, label FROM items WHERE id = 1").rows.first)
            #expect(try row.int("id") == 1)
            #expect(throws: DatabaseError.self) { try row.int("label") }
            #expect(throws: DatabaseError.self) { try row.uuid("label") }
            #expect(throws: DatabaseError.self) { try row.text("missing") }
            #expect(throws: DatabaseError.self) { try row.text(5) }
            #expect(try row.bytes("label") == Array("a".utf8))
        }
    }

    @Test func textWithNULIsNotSent() throws {
        let connection = try TestDatabase.connectAdmin()
        #expect {
            try connection.query("SELECT $1", [.text("a\u{0}b")])
        } throws: { error in
            (error as? DatabaseError)?.code == .invalidParameter
        }
        #expect(connection.isHealthy)
    }

    @Test func sessionSettingsAreApplied() throws {
        try TestDatabase.withSchema { configuration, schema in
            var configuration = configuration
            configuration.statementTimeout = .milliseconds(1500)
            configuration.applicationName = "avatar-cropper-tests"
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            let row = try #require(
                try connection.query(
                    """
                    SELECT current_schema() AS schema, current_setting('statement_timeout') AS timeout,
                           current_setting('application_name') AS app, current_setting('TimeZone') AS tz,
                           current_setting('synchronous_commit') AS sync, pg_backend_pid() AS pid
                    """
                ).rows.first
            )
            // The test cluster's default is synchronous_commit=off (scripts/services.sh): a session commits
            // durably all the same.
            #expect(try row.text("sync") == "on")
            #expect(try row.text("schema") == schema)
            #expect(try row.text("timeout") == "1500ms")
            #expect(try row.text("app") == "avatar-cropper-tests")
            #expect(try row.text("tz") == "UTC")
            #expect(try row.int("pid") == Int64(connection.backendProcessID))
        }
    }

    @Test("a silent server is detected by TCP keepalives and a send timeout, not after the kernel's 15 minutes")
    func deadPeerDetection() throws {
        try TestDatabase.withSchema { configuration, _ in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            #expect(connection.connectionOption("keepalives") == "1")
            #expect(connection.connectionOption("keepalives_idle") == "10")
            #expect(connection.connectionOption("keepalives_interval") == "5")
            #expect(connection.connectionOption("keepalives_count") == "3")
            #expect(connection.connectionOption("tcp_user_timeout") == "30000")
        }
    }

    @Test func scriptsRunSeveralStatements() throws {
        try TestDatabase.withSchema { configuration, _ in
            let connection = try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
            try connection.execute(
                script: "CREATE TABLE a (x int); INSERT INTO a VALUES (1); INSERT INTO a VALUES (2);"
            )
            #expect(try connection.query("SELECT sum(x) AS s FROM a").rows.first?.int("s") == 3)
            #expect {
                try connection.execute(script: "INSERT INTO a VALUES (3); SELEC oops;")
            } throws: { error in
                (error as? DatabaseError)?.sqlState == .syntaxError
            }
        }
    }
}
