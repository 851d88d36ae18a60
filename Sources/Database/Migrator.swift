import Foundation
import Logging

/// Applies `Migration`s in order and records them in `schema_migrations(version, name, checksum, applied_at)` in
/// the current schema. Each migration runs in its own transaction that first takes a transaction-scoped advisory
/// lock keyed on the current schema, so workers migrating at once apply each migration exactly once. The run also
/// holds that lock in the session, so one marked `Migration.noTransactionMarker` runs statement by statement under
/// it.
public struct Migrator: Sendable {
    public let migrations: [Migration]
    private let logger: Logger

    /// Reads `NNNN_name.sql` files (other extensions and hidden files are ignored), ordered by version. A `.sql` file
    /// with another name, two files with one version, a first version other than 1 or a gap is an error (`migration`).
    public static func load(directory: URL) throws(DatabaseError) -> [Migration] {
        let fileNames: [String]
        do {
            fileNames = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw DatabaseError(code: .migration, message: "cannot list the migrations directory")
        }
        var migrations: [Migration] = []
        var fileByVersion: [Int: String] = [:]
        for fileName in fileNames.sorted() where fileName.hasSuffix(".sql") && !fileName.hasPrefix(".") {
            guard let (version, name) = Migration.parseFileName(fileName) else {
                throw DatabaseError(
                    code: .migration,
                    message: "migration file \(fileName) is not named NNNN_name.sql"
                )
            }
            if let other = fileByVersion[version] {
                throw DatabaseError(
                    code: .migration,
                    message: "duplicate migration version \(version): \(other) and \(fileName)"
                )
            }
            fileByVersion[version] = fileName
            let data: Data
            do {
                data = try Data(contentsOf: directory.appendingPathComponent(fileName))
            } catch {
                throw DatabaseError(code: .migration, message: "cannot read migration file \(fileName)")
            }
            guard let sql = String(data: data, encoding: .utf8) else {
                throw DatabaseError(code: .migration, message: "migration file \(fileName) is not UTF-8")
            }
            migrations.append(Migration(version: version, name: name, sql: sql))
        }
        guard !migrations.isEmpty else {
            throw DatabaseError(code: .migration, message: "no NNNN_name.sql files in the migrations directory")
        }
        migrations.sort { $0.version < $1.version }
        try validateSequence(migrations)
        return migrations
    }

    public init(migrations: [Migration], logger: Logger) {
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.logger = logger
    }

    /// Applies the pending migrations in order and returns them (empty when the schema is up to date).
    ///
    /// Throws `migration` for inconsistent migrations, a changed applied migration, a pending migration older than
    /// an applied one, or a failing migration (with the server's SQLSTATE; nothing of that migration is kept).
    /// Connection errors are rethrown as they are.
    @discardableResult
    public func migrate(_ connection: PostgresConnection) throws(DatabaseError) -> [Migration] {
        try Self.validateSequence(migrations)
        try lockSession(connection)
        defer { _ = try? connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", [.text(Self.lockName)]) }
        try inTransaction(connection) { connection throws(DatabaseError) in
            try lock(connection)
            try connection.query(Self.createTable)
        }
        var applied: [Migration] = []
        while true {
            let next = try inTransaction(connection) { connection throws(DatabaseError) -> Migration? in
                try lock(connection)
                guard let next = try pending(recorded: recordedMigrations(connection)).first else { return nil }
                // Applied below, outside this transaction.
                guard next.runsInTransaction else { return next }
                try apply(next, on: connection)
                try record(next, on: connection)
                return next
            }
            guard let next else { break }
            if !next.runsInTransaction, try !applyOutsideTransaction(next, on: connection) { continue }
            logger.info(
                "database migration applied",
                metadata: [
                    DatabaseLogKey.migrationVersion: "\(next.version)",
                    DatabaseLogKey.migrationName: "\(next.name)",
                ]
            )
            applied.append(next)
        }
        return applied
    }

    /// The migrations not yet recorded in the current schema, in order. Checks the applied ones like `migrate`.
    public func pending(_ connection: PostgresConnection) throws(DatabaseError) -> [Migration] {
        try Self.validateSequence(migrations)
        let exists = try connection.query(
            """
            SELECT EXISTS (
                SELECT 1 FROM pg_catalog.pg_tables
                WHERE schemaname = current_schema() AND tablename = 'schema_migrations'
            ) AS present
            """
        )
        guard try exists.rows.first?.bool("present") == true else { return migrations }
        return try pending(recorded: recordedMigrations(connection))
    }

    // MARK: Bookkeeping

    private static let createTable = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version bigint PRIMARY KEY,
            name text NOT NULL,
            checksum text NOT NULL,
            applied_at timestamptz NOT NULL DEFAULT now()
        )
        """

    private struct Recorded {
        var version: Int
        var name: String
        var checksum: String
    }

    private func lock(_ connection: PostgresConnection) throws(DatabaseError) {
        try connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", [.text(Self.lockName)])
    }

    /// Takes the migrations' lock for the whole run, held by the session (the transactions' own takes of it are then
    /// immediate). Waits by trying every 100 ms, never blocked inside a statement: a migrator blocked in a
    /// statement holds a snapshot, which a `CREATE INDEX CONCURRENTLY` of the migrator holding the lock would wait
    /// for — a deadlock.
    private func lockSession(_ connection: PostgresConnection) throws(DatabaseError) {
        while try connection.query("SELECT pg_try_advisory_lock(\(Self.lockKey)) AS locked", [.text(Self.lockName)])
            .rows.first?.bool("locked") != true
        {
            usleep(100_000)
        }
    }

    /// The migrations' advisory lock: one per schema, taken per transaction or (outside one) per session.
    private static let lockKey = "hashtextextended($1 || coalesce(current_schema(), ''), 0)"
    private static let lockName = "avatar-cropper.schema_migrations:"

    private func record(_ migration: Migration, on connection: PostgresConnection) throws(DatabaseError) {
        try connection.query(
            "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
            [.int(Int64(migration.version)), .text(migration.name), .text(migration.checksum)]
        )
    }

    /// Applies a migration marked `Migration.noTransactionMarker`: each statement on its own (so `CREATE INDEX
    /// CONCURRENTLY` may run), under the session's lock (`lockSession`), then records it. Returns false when another
    /// migrator applied it meanwhile. A statement that fails leaves the migration pending; its statements are
    /// written to be run again from the first.
    private func applyOutsideTransaction(_ migration: Migration, on connection: PostgresConnection)
        throws(DatabaseError) -> Bool
    {
        guard try pending(recorded: recordedMigrations(connection)).first == migration else { return false }
        for statement in migration.statements {
            try run(statement, of: migration, on: connection)
        }
        try record(migration, on: connection)
        return true
    }

    private func recordedMigrations(_ connection: PostgresConnection) throws(DatabaseError) -> [Recorded] {
        var recorded: [Recorded] = []
        for row in try connection.query("SELECT version, name, checksum FROM schema_migrations ORDER BY version").rows {
            guard let version = try row.int("version"), let name = try row.text("name"),
                let checksum = try row.text("checksum")
            else {
                throw DatabaseError(code: .decoding, message: "schema_migrations has NULLs")
            }
            recorded.append(Recorded(version: Int(version), name: name, checksum: checksum))
        }
        return recorded
    }

    /// Checks the recorded migrations against the known ones and returns the known ones not yet recorded.
    private func pending(recorded: [Recorded]) throws(DatabaseError) -> [Migration] {
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for entry in recorded {
            guard let migration = known[entry.version] else {
                // A newer release migrated this database; an older worker keeps working on the columns it knows.
                logger.warning(
                    "database has a migration this release does not know",
                    metadata: [DatabaseLogKey.migrationVersion: "\(entry.version)"]
                )
                continue
            }
            if migration.checksum != entry.checksum {
                throw DatabaseError(
                    code: .migration,
                    message: "applied migration \(entry.version) (\(entry.name)) was changed after it was applied"
                )
            }
        }
        let recordedVersions = Set(recorded.map(\.version))
        let pending = migrations.filter { !recordedVersions.contains($0.version) }
        if let first = pending.first, let newest = recordedVersions.max(), newest > first.version {
            throw DatabaseError(
                code: .migration,
                message: "migration \(first.version) is pending but the newer migration \(newest) is already applied"
            )
        }
        return pending
    }

    private func apply(_ migration: Migration, on connection: PostgresConnection) throws(DatabaseError) {
        try run(migration.sql, of: migration, on: connection)
    }

    /// Runs `script` (a migration's SQL, or one statement of it); a failing query becomes a `migration` error that
    /// names the migration (with the server's SQLSTATE kept).
    private func run(_ script: String, of migration: Migration, on connection: PostgresConnection)
        throws(DatabaseError)
    {
        do {
            try connection.execute(script: script)
        } catch {
            guard error.code == .queryFailed else { throw error }
            var wrapped = error
            wrapped.code = .migration
            wrapped.message = "migration \(migration.version) (\(migration.name)) failed"
            throw wrapped
        }
    }

    private func inTransaction<T>(
        _ connection: PostgresConnection,
        _ body: (PostgresConnection) throws(DatabaseError) -> T
    ) throws(DatabaseError) -> T {
        do {
            return try connection.transaction { connection in try body(connection) }
        } catch let error as PostgresTransactionError {
            if let underlying = error.databaseError { throw underlying }
            throw DatabaseError(code: .migration, message: "migration transaction failed: \(error)")
        } catch {
            throw DatabaseError(code: .migration, message: "migration transaction failed: \(error)")
        }
    }

    static func validateSequence(_ migrations: [Migration]) throws(DatabaseError) {
        for (index, migration) in migrations.enumerated() where migration.version != index + 1 {
            if index > 0, migrations[index - 1].version == migration.version {
                throw DatabaseError(code: .migration, message: "duplicate migration version \(migration.version)")
            }
            throw DatabaseError(
                code: .migration,
                message: "migration versions must be 1, 2, 3, … without gaps; expected \(index + 1), found "
                    + "\(migration.version) (\(migration.name))"
            )
        }
    }
}
