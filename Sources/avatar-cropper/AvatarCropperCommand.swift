import ArgumentParser
import AvatarWorker

@main
struct AvatarCropperCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "avatar-cropper",
        abstract: "Renders users' profile pictures (docs/ARCHITECTURE.md; configuration: docs/CONFIGURATION.md).",
        // The project's version and the loaded libraries' (BuildInfo).
        version: BuildInfo.current.versionText,
        subcommands: [
            CropCommand.self, WorkerCommand.self, MigrateCommand.self, TopicsCommand.self, EnqueueCommand.self,
            ResultsCommand.self, ReplayCommand.self, ConfigCommand.self, PruneCommand.self, ForgetCommand.self,
            RenderHelperCommand.self,
        ]
    )
}
