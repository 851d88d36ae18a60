import ArgumentParser
import AvatarWorker
import Database
import Foundation

struct ForgetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Forget a user: delete every avatar object, the ledger rows and the profile's avatar columns.",
        discussion: """
            Runs under the user's lock, as a forget request on the requests topic does (docs/ARCHITECTURE.md §4): \
            a job of the user in flight either published before and is erased, or publishes nothing. Crop requests \
            of the user sent before the forget end SUPERSEDED; a later one starts again from version 1. It returns \
            after the store's request deadline, once a last look deleted any write a job sent before it lost the \
            lock. Running it again is harmless.
            """)

    @OptionGroup var config: ConfigOptions

    @Option(help: "The user id (a UUID).")
    var user: String

    func run() throws {
        guard let userID = UUID(uuidString: user) else { throw ValidationError("--user must be a UUID") }
        let values = try config.values()
        let logger = try makeLogger("avatar-cropper.forget", values: values)
        let database = PostgresClient(
            configuration: try WorkerFactory.databaseConfiguration(values), maxConnections: 1, logger: logger)
        defer { database.shutdown() }
        let forgetting = UserForgetting(
            database: database,
            avatars: try WorkerFactory.store(url: try values.require(.storageURL), values: values, logger: logger),
            lockTimeout: .seconds(try values.integer(.userLockTimeoutSeconds, minimum: 1)), logger: logger)
        let erased = try forgetting.run(userID: userID, requestedAt: Date())
        print("forgotten: \(erased.ledgerRows) ledger rows and \(erased.objects) avatar objects deleted")
    }
}
