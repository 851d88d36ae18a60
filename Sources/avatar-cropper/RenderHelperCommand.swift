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

    @Argument(
        parsing: .captureForPassthrough,
        help:
            "What the worker starts its helpers with (RenderHelperOptions: libvips threads, face model, decode cores).")
    var options: [String] = []

    func run() throws {
        let status = RenderHelperServer.run(arguments: options)
        if status != 0 { throw ExitCode(status) }
    }
}
