import ArgumentParser
import AvatarWorker
import Database
import Foundation

struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply pending database migrations in order and record them.",
        discussion: "Reads NNNN_name.sql files from database.migrations-dir (default ./migrations).")

    @OptionGroup var config: ConfigOptions

    @Flag(help: "Only list the pending migrations.")
    var dryRun = false

    func run() throws {
        let values = try config.values()
        let logger = try makeLogger("avatar-cropper.migrate", values: values)
        let directory = URL(fileURLWithPath: try values.require(.migrationsDirectory), isDirectory: true)
        let migrator = Migrator(migrations: try Migrator.load(directory: directory), logger: logger)
        var database = try WorkerFactory.databaseConfiguration(values)
        // The worker's statement and lock timeouts are for jobs; a migration may rightly take longer.
        database.statementTimeout = nil
        database.lockTimeout = nil
        let connection = try PostgresConnection.connect(database, logger: logger)
        if dryRun {
            for migration in try migrator.pending(connection) {
                print("pending \(migration.version) \(migration.name)")
            }
            return
        }
        let applied = try migrator.migrate(connection)
        for migration in applied { print("applied \(migration.version) \(migration.name)") }
        if applied.isEmpty { print("database is up to date") }
    }
}
