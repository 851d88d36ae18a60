import ArgumentParser
import AvatarWorker
import Logging
import ServiceLifecycle
import UnixSignals

struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Consume crop requests and publish avatars until SIGTERM or SIGINT.",
        discussion: "On SIGTERM the worker stops fetching, lets running jobs finish within worker.drain-seconds, commits what finished and leaves the consumer group.")

    @OptionGroup var config: ConfigOptions

    func run() async throws {
        let values = try config.values()
        let logger = makeLogger("avatar-cropper.worker", values: values)
        let parts = try WorkerFactory.build(values, logger: logger)
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: parts.service)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
        parts.database.shutdown()
    }
}
