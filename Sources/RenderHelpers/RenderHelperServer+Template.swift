// The helper template's two entry points (docs/ARCHITECTURE.md §3, "Render helpers"), called from C by
// `CHelperTemplate.c`'s constructor, before Swift's `main` and with no thread but the caller's: the template warms
// up once (`RenderHelperServer.prepare`), and every helper it forks starts from there: it locks itself down and
// serves its one job. A forked helper never runs `main`, so it starts no thread of the Swift runtime's.

/// In the template: the helpers' start, from the options after the subcommand (`RenderHelperOptions`). Returns 0
/// when done; the template then forks warm helpers.
@_cdecl("chelper_template_warm_up")
public func renderHelperTemplateWarmUp(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>)
    -> Int32
{
    let words = (0..<Int(argc)).compactMap { argv[$0].map { String(cString: $0) } }
    guard let options = RenderHelperOptions(arguments: words), RenderHelperServer.prepare(options) else {
        return RenderHelperServer.startFailed
    }
    HelperProcess.trimHeap()
    return 0
}

/// In a helper forked warm: its life from the lockdown on, on the channel the template gave it; `rehearse` non-zero
/// when the worker asked for a rehearsed helper (`RenderHelperServer.serve`). Returns its exit status.
@_cdecl("chelper_forked_helper_main")
public func renderHelperForkedMain(_ rehearse: Int32) -> Int32 {
    let channel = HelperChannel(descriptor: HelperChannel.helperDescriptor)
    // A helper never outlives its worker, even stuck in a C call that never returns.
    guard (try? channel.exitWhenPeerGone(status: RenderHelperServer.workerGone)) != nil else {
        return RenderHelperServer.startFailed
    }
    return RenderHelperServer.serve(channel, idleTrim: false, rehearse: rehearse != 0)
}
