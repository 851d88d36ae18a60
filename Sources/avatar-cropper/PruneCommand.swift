import ArgumentParser
import AvatarWorker
import Database

struct PruneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Delete ledger rows older than ledger.retention-hours (forget tombstones are kept).",
        discussion: """
            In batches of ledger.prune-batch rows, oldest first, one prune at a time across the fleet. The row \
            behind each profile's current version is kept whatever its age (docs/ARCHITECTURE.md §4). Workers do \
            the same every ledger.prune-interval-minutes when it is above 0.
            """)

    @OptionGroup var config: ConfigOptions

    func run() throws {
        let values = try config.values()
        let logger = try makeLogger("avatar-cropper.prune", values: values)
        var configuration = try WorkerFactory.databaseConfiguration(values)
        // A batch walks an index; the worker's statement timeout is for jobs.
        configuration.statementTimeout = nil
        let database = PostgresClient(configuration: configuration, maxConnections: 1, logger: logger)
        defer { database.shutdown() }
        guard let pruned = try WorkerFactory.ledgerRetention(values, client: database).prune() else {
            print("another prune is running; nothing done")
            return
        }
        print("pruned \(pruned) ledger rows")
    }
}
