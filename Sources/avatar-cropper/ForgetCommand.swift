import ArgumentParser
import AvatarWorker
import Database
import Foundation
import Messaging

struct ForgetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Forget a user: delete every avatar object, the ledger rows and the profile's avatar columns.",
        discussion: """
            Runs under the user's lock, as a forget request on the requests topic does (docs/ARCHITECTURE.md §4): \
            a job of the user in flight either published before and is erased, or publishes nothing. Crop requests \
            of the user sent before the forget (stamped up to worker.max-clock-skew-seconds after it) end \
            SUPERSEDED; a later one starts again from version 1. It returns after the store's request deadline, \
            once a last look deleted any write a job sent before it lost the lock, once the user's sources \
            recorded for deletion are deleted, and once a null record for the user's key is on the compacted \
            results topic. The forget is recorded as pending first: when it fails, the workers \
            run it again until it completes (--wait waits for that). Running it again is harmless. docs/DATA.md \
            says what else the operator and the app must delete.
            """)

    @OptionGroup var config: ConfigOptions

    @Option(help: "The user id (a UUID).")
    var user: String

    @Flag(help: "When the forget fails here, wait until a worker completes it (it stays pending until then).")
    var wait = false

    @Option(help: "With --wait, the longest wait in seconds.")
    var waitTimeout = 3600

    /// What `storage.delete-source = never` leaves to the app (docs/DATA.md, window 7).
    static let sourcesStay = """
        storage.delete-source is never: the worker deletes no source photo, so the user's uploads (with their GPS \
        and camera EXIF) stay until the app deletes them.
        """

    func run() throws {
        guard let userID = UUID(uuidString: user) else { throw ValidationError("--user must be a UUID") }
        let values = try config.values()
        let logger = try makeLogger("avatar-cropper.forget", values: values)
        let database = PostgresClient(
            configuration: try WorkerFactory.databaseConfiguration(values), maxConnections: 1, logger: logger)
        defer { database.shutdown() }
        let avatars = try WorkerFactory.store(url: try values.require(.storageURL), values: values, logger: logger)
        let sources = try values[.storageSourcesURL].map {
            try WorkerFactory.store(url: $0, values: values, logger: logger)
        }
        // The results topic's null record for the user, written once the forget returns (docs/DATA.md, window 5).
        let producer = try KafkaProducer(configuration: try WorkerFactory.kafkaConfiguration(values), logger: logger)
        defer { producer.close(timeout: .seconds(5)) }
        let forgetting = UserForgetting(
            database: database, avatars: avatars,
            lockTimeout: .seconds(try values.integer(.userLockTimeoutSeconds, minimum: 1)),
            clockSkew: TimeInterval(try values.integer(.maxClockSkewSeconds, minimum: 0)), sources: sources ?? avatars,
            results: ResultsErasure(producer: producer, topic: try WorkerFactory.eventTopics(values).results),
            logger: logger)
        if try WorkerFactory.sourceDeletion(values) == .never { print(Self.sourcesStay) }
        do {
            let erased = try forgetting.run(userID: userID, requestedAt: Date())
            print(
                "forgotten: \(erased.ledgerRows) ledger rows, \(erased.objects) avatar objects and "
                    + "\(erased.sources) source photos deleted")
            if let reason = erased.resultsNotErased {
                print("\(reason); the workers write it at the forget's last look")
            }
        } catch {
            guard (try? forgetting.pending.isPending(userID: userID)) == true else { throw error }
            print("the forget failed here (\(error)); it is pending: the workers run it again until it completes")
            guard wait else { throw ExitCode.failure }
            try waitForWorkers(forgetting.pending, userID: userID)
            print("forgotten: a worker completed the forget")
        }
    }

    /// Polls until the forget of `userID` is no longer pending, at most `waitTimeout` seconds.
    private func waitForWorkers(_ pending: PendingForgets, userID: UUID) throws {
        let deadline = Date().addingTimeInterval(TimeInterval(waitTimeout))
        while try pending.isPending(userID: userID) {
            guard Date() < deadline else {
                throw ValidationError("the forget is still pending after \(waitTimeout) s; the workers go on trying")
            }
            Thread.sleep(forTimeInterval: 2)
        }
    }
}
