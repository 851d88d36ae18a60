import ArgumentParser

@main
struct AvatarCropperCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "avatar-cropper",
        abstract: "Renders users' profile pictures (DESIGN.md).",
        subcommands: [
            CropCommand.self, WorkerCommand.self, MigrateCommand.self, TopicsCommand.self, EnqueueCommand.self,
            ResultsCommand.self, ReplayCommand.self, PruneCommand.self, ForgetCommand.self,
        ]
    )
}
