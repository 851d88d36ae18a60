import ArgumentParser
import RenderHelpers

/// `avatar-cropper render-helper` (hidden): a render helper, started by the worker's `RenderHelperPool` (and by
/// `crop`) with its channel as descriptor 3 and an empty environment (docs/ARCHITECTURE.md §3, "Render helpers").
/// Not for people: run by hand it has no channel and exits.
struct RenderHelperCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: RenderHelperPool.Launch.subcommand,
        abstract: "Render jobs for the worker that started this process (internal).",
        shouldDisplay: false)

    @Option(help: "libvips threads per render (the worker's vips.concurrency; default: libvips').")
    var vipsConcurrency: Int?

    @Option(help: "The face detector's model file (loaded before the helper locks itself down).")
    var faceModel: String?

    @Option(help: "How many decode cores the worker shares on descriptor 4 (none given: each render decodes alone).")
    var decodeCores: Int?

    func run() throws {
        let status = RenderHelperServer.run(
            vipsConcurrency: vipsConcurrency, faceModel: faceModel, decodeCores: decodeCores)
        if status != 0 { throw ExitCode(status) }
    }
}
