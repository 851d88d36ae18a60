import Foundation
import Imaging
import Logging
import Sandbox

/// A render helper's side (`avatar-cropper render-helper`, started by `RenderHelperPool`; docs/ARCHITECTURE.md
/// §3, "Render helpers"): starts libvips, renders one generated photo so every library it needs is loaded, locks
/// itself down, says `ready`, then serves one job after another on its channel until the worker closes it.
public enum RenderHelperServer {
    /// Exit status of a helper that could not start (the pool sees its channel close before `ready`).
    static let startFailed = HelperProcess.startFailed
    /// Exit status of a helper whose allocation was refused where the library's own answer is to abort (GLib's
    /// g_malloc, C++ `operator new`): its job failed for memory (`out_of_memory`), it did not crash.
    static let outOfMemory: Int32 = 71
    /// How long a helper waits for its next job before it gives its face networks and free heap back
    /// (`giveMemoryBack`), and its worker closes its memory files (`RenderHelperPool`).
    static let idleTrimDelay: Int32 = 1_000
    /// Exit status of a helper whose worker is gone (the channel's other end closed while it rendered).
    static let workerGone: Int32 = 72

    /// For `avatar-bench`: this process's heap scrubbed as a helper's (`HelperProcess.scrubHeap`), so that a job
    /// rendered in-process keeps the same privacy promise as one in a helper and the two can be compared for what
    /// the process boundary alone costs. glibc reads the helpers' malloc settings (`HelperProcess.mallocTunables`)
    /// only at exec, so a process started without them executes itself again with them first (and does not
    /// return). False when the C library cannot scrub, or the exec failed.
    @_spi(Benchmark) public static func scrubHeapAsHelpersDo() -> Bool {
        if getenv("GLIBC_TUNABLES").map({ String(cString: $0) }) != HelperProcess.mallocTunables {
            setenv("GLIBC_TUNABLES", HelperProcess.mallocTunables, 1)
            execv("/proc/self/exe", CommandLine.unsafeArgv)
            return false
        }
        return HelperProcess.scrubHeap()
    }

    /// Runs the helper started with `arguments` (the words after its subcommand, `RenderHelperOptions`); returns its
    /// exit status (0 when the worker closed the channel; `startFailed` for arguments it cannot read).
    public static func run(arguments: [String]) -> Int32 {
        guard let options = RenderHelperOptions(arguments: arguments) else { return startFailed }
        return run(options)
    }

    /// The helper's face model is loaded before the lockdown (a model that cannot be loaded leaves renders without
    /// faces: the centred square, `FaceReport.error`).
    static func run(_ options: RenderHelperOptions) -> Int32 {
        let channel = HelperChannel(descriptor: HelperChannel.helperDescriptor)
        // Its stderr is /dev/null: nothing to log to, and nothing of a job may leave but its reply.
        let logger = Logger(label: "avatar-cropper.render-helper") { _ in SwiftLogNoOpLogHandler() }
        // A helper never outlives its worker, even stuck in a C call that never returns.
        guard (try? channel.exitWhenPeerGone(status: workerGone)) != nil else { return startFailed }
        HelperProcess.exitOnFailedNew(status: outOfMemory)
        // No job's pixels outlive it in the heap the next job's decoders allocate from.
        guard HelperProcess.scrubHeap() else { return startFailed }
        do {
            try Vips.initialise(concurrency: options.vipsConcurrency)
            Vips.exitOnFailedAllocation(status: outOfMemory)
            if let faceModel = options.faceModel { FaceDetectors.install(modelPath: faceModel, keptNetworks: 1) }
            if let decodeCores = options.decodeCores {
                guard let cores = DecodeCores(inherited: HelperProcess.coresDescriptor, count: decodeCores) else {
                    return startFailed
                }
                DecodeCores.install(cores)
            }
            try AvatarRenderer(logger: logger).warmUp()
            try lockDownHelper()
            try channel.send(HelperCoding.encode(HelperReply.ready))
        } catch {
            return startFailed
        }
        var job: (session: InProcessRenderSession, result: MemoryFile)?
        do {
            while true {
                // Idle a while between jobs (and after the warm-up): the face networks and the freed heap go back to
                // the kernel. Not after every job: the next job would fault its pages in again (CPU a busy helper keeps).
                if job == nil, try !channel.waitReadable(milliseconds: idleTrimDelay) { giveMemoryBack() }
                guard let message = try channel.receive() else { break }
                let reply: HelperReply
                switch try HelperCoding.decode(HelperRequest.self, from: message.bytes) {
                case .probe(let request):
                    job?.result.close()
                    job = nil
                    guard message.descriptors.count == 2 else { return startFailed }
                    let source = MemoryFile(descriptor: message.descriptors[0])
                    let result = MemoryFile(descriptor: message.descriptors[1])
                    let session = InProcessRenderSession(
                        renderer: AvatarRenderer(limits: request.limits, logger: logger), seams: request.seams)
                    job = (session, result)
                    // The photo is read where it lies in the memory file (mapped; the mapping outlives the descriptor).
                    reply = outcome {
                        .probed(
                            try session.probe(
                                mapping: source, length: request.sourceLength, input: request.input,
                                options: request.options))
                    }
                    source.close()
                case .render(let fallback):
                    guard let probed = job else {
                        reply = .failed(code: ImagingError.Code.invalidRequest.rawValue, detail: "render before probe")
                        break
                    }
                    let (session, result) = probed
                    job = nil
                    reply = outcome {
                        let rendered = try session.render(fallback: fallback, reservedBytes: 0, cancellation: nil)
                        try result.write(([rendered.avatar] + rendered.extras).map(\.data))
                        return .rendered(RenderedImage(rendered))
                    }
                    result.close()
                }
                try channel.send(HelperCoding.encode(reply))
            }
            return 0
        } catch {
            return startFailed
        }
    }

    /// What an idle helper holds for no job: the face networks (rebuilt by its next no-pose job) and its free heap.
    private static func giveMemoryBack() {
        FaceDetectors.releaseNetworks()
        HelperProcess.trimHeap()
    }

    /// The reply for `body`'s outcome: an `ImagingError` as `failed` with its code; anything else as
    /// `processing_failed`.
    private static func outcome(_ body: () throws -> HelperReply) -> HelperReply {
        do {
            return try body()
        } catch let error as ImagingError {
            return .failed(code: error.code.rawValue, detail: error.detail)
        } catch {
            return .failed(code: ImagingError.Code.processingFailed.rawValue, detail: "\(type(of: error))")
        }
    }
}

/// Drops what the helper no longer needs once its libraries are loaded, before it reads any job
/// (`ProcessLockdown`: no network, no new process, `execve` kills, no file written, no signal to another
/// process). A helper that cannot lock itself down never says `ready`, so it never gets a job.
func lockDownHelper() throws {
    try ProcessLockdown.apply()
}
