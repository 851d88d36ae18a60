import Foundation
import Imaging
import Logging
import Sandbox

/// A render helper's side (`avatar-cropper render-helper`, started by `RenderHelperPool`; docs/ARCHITECTURE.md
/// §3, "Render helpers"; docs/SECURITY.md): starts libvips, renders one generated photo so every library it needs is
/// loaded, locks itself down, says `ready`, then serves one job (a probe, and the render that may follow) and is
/// killed by its worker. A second probe ends it: a helper never holds two jobs' photos.
public enum RenderHelperServer {
    /// Exit status of a helper that could not start (the pool sees its channel close before `ready`).
    static let startFailed = HelperProcess.startFailed
    /// Exit status of a helper whose allocation was refused where the library's own answer is to abort (GLib's
    /// g_malloc, C++ `operator new`): its job failed for memory (`out_of_memory`), it did not crash.
    static let outOfMemory: Int32 = 71
    /// How long a helper waits for its job before it gives its face networks and free heap back (`giveMemoryBack`).
    static let idleTrimDelay: Int32 = 1_000
    /// Exit status of a helper whose worker is gone (the channel's other end closed while it rendered).
    static let workerGone: Int32 = 72

    /// Runs the helper started with `arguments` (the words after its subcommand, `RenderHelperOptions`); returns its
    /// exit status (0 when the worker closed the channel; `startFailed` for arguments it cannot read).
    public static func run(arguments: [String]) -> Int32 {
        guard let options = RenderHelperOptions(arguments: arguments) else { return startFailed }
        return run(options)
    }

    /// A spawned helper: it starts (`prepare`), then serves (`serve`). Its face model is loaded before the lockdown
    /// (a model that cannot be loaded leaves renders without faces: the centred square, `FaceReport.error`).
    static func run(_ options: RenderHelperOptions) -> Int32 {
        let channel = HelperChannel(descriptor: HelperChannel.helperDescriptor)
        // A helper never outlives its worker, even stuck in a C call that never returns.
        guard (try? channel.exitWhenPeerGone(status: workerGone)) != nil, prepare(options) else { return startFailed }
        return serve(channel, idleTrim: true)
    }

    /// Everything a helper needs before its lockdown: done by each spawned helper, and once by the template for every
    /// helper it forks (`RenderHelperServer+Template.swift`). False when a step failed.
    static func prepare(_ options: RenderHelperOptions) -> Bool {
        HelperProcess.exitOnFailedNew(status: outOfMemory)
        // The allow-list compiled while a file may still grow (libseccomp writes it into a memory file); then no
        // memory it writes is shared with the template or another helper (liborc's code).
        guard (try? seccompFilter.get()) != nil, HelperProcess.refuseFileGrowth() else { return false }
        do {
            try Vips.initialise(concurrency: options.vipsConcurrency)
            Vips.exitOnFailedAllocation(status: outOfMemory)
            if let faceModel = options.faceModel { FaceDetectors.install(modelPath: faceModel, keptNetworks: 1) }
            if let decodeCores = options.decodeCores {
                guard let cores = DecodeCores(inherited: HelperProcess.coresDescriptor, count: decodeCores) else {
                    return false
                }
                DecodeCores.install(cores)
            }
            HelperCoding.rehearse(with: try AvatarRenderer(logger: logger).warmUp())
            return true
        } catch {
            return false
        }
    }

    /// The lockdown's seccomp allow-list, compiled at the first use, in `prepare`: in a template, once for every helper
    /// it forks (each loads the template's copy with its own pid).
    static let seccompFilter = Result { () throws(LockdownError) in
        try SeccompFilter(channel: HelperChannel.helperDescriptor)
    }

    /// Its stderr is /dev/null: nothing to log to, and nothing of a job may leave but its reply.
    private static let logger = Logger(label: "avatar-cropper.render-helper") { _ in SwiftLogNoOpLogHandler() }

    /// A prepared helper's life: it locks itself down, says `ready`, and serves one job. `idleTrim`: a helper that
    /// waits a while gives its face networks and free heap back (not one forked warm: what it holds is shared with
    /// its template, and giving it back would only make its job rebuild it). `rehearse`: locked down, it renders a
    /// generated photo before it says `ready` (`rehearseJob`).
    static func serve(_ channel: HelperChannel, idleTrim: Bool, rehearse: Bool = false) -> Int32 {
        do {
            let layers = try ProcessLockdown.apply(seccompFilter.get())
            if rehearse { rehearseJob() }
            try channel.send(HelperCoding.encode(HelperReply.ready(layers)))
        } catch {
            return startFailed
        }
        do {
            // Idle a while after the warm-up: the face networks and the freed heap go back to the kernel.
            if idleTrim, try !channel.waitReadable(milliseconds: idleTrimDelay) { giveMemoryBack() }
            guard let message = try channel.receive() else { return 0 }
            guard case .probe(let request) = try HelperCoding.decode(HelperRequest.self, from: message.bytes),
                message.descriptors.count == 2
            else { return startFailed }
            let source = MemoryFile(descriptor: message.descriptors[0])
            let result = MemoryFile(descriptor: message.descriptors[1])
            let session = InProcessRenderSession(
                renderer: AvatarRenderer(limits: request.limits, logger: logger), seams: request.seams)
            // TEST-ONLY: the hostile helper's forged replies (debug builds).
            let forgery = try request.seams.flatMap {
                $0.forgery(in: try source.read(offset: 0, length: request.sourceLength))
            }
            func send(_ reply: HelperReply) throws {
                try channel.send(try forgery?.bytes(for: reply) ?? HelperCoding.encode(reply))
            }
            // The photo is read where it lies in the memory file (mapped; the mapping outlives the descriptor).
            let probed = outcome(request.nonce) {
                .probed(
                    nonce: request.nonce,
                    try session.probe(
                        mapping: source, length: request.sourceLength, input: request.input, options: request.options))
            }
            source.close()
            try send(probed)
            guard case .probed = probed, let next = try channel.receive() else { return 0 }
            guard case .render(let nonce, let fallback) = try HelperCoding.decode(HelperRequest.self, from: next.bytes),
                nonce == request.nonce
            else { return startFailed }
            let rendered = outcome(nonce) {
                let rendered = try session.render(fallback: fallback, reservedBytes: 0, cancellation: nil)
                do {
                    try result.writeMapped(([rendered.avatar] + rendered.extras).map(\.data))
                } catch {
                    throw ImagingError(.processingFailed, detail: "the renditions do not fit the result file")
                }
                return .rendered(nonce: nonce, RenderedImage(rendered))
            }
            result.close()
            try send(rendered)
            // The worker kills it now; until then it holds nothing it would read again.
            while try channel.receive() != nil {}
            return 0
        } catch {
            return startFailed
        }
    }

    /// The rehearsal (`AvatarRenderer.rehearse`; a failed one leaves the helper as it was), holding no decode core: it
    /// is no job, and a core it held would keep a running job's HEIF grid from the idle cores (which then decodes on
    /// one thread to its end, twice as long on a 24 MP photo).
    private static func rehearseJob() {
        let cores = DecodeCores.installed
        DecodeCores.install(nil)
        defer { DecodeCores.install(cores) }
        try? AvatarRenderer(logger: logger).rehearse()
    }

    /// What an idle helper holds for no job: the face networks (rebuilt by its next no-pose job) and its free heap.
    private static func giveMemoryBack() {
        FaceDetectors.releaseNetworks()
        HelperProcess.trimHeap()
    }

    /// The reply for `body`'s outcome: an `ImagingError` as `failed` with its code; anything else as
    /// `processing_failed`.
    private static func outcome(_ nonce: UInt64, _ body: () throws -> HelperReply) -> HelperReply {
        do {
            return try body()
        } catch let error as ImagingError {
            return .failed(nonce: nonce, HelperFailure(error))
        } catch {
            return .failed(nonce: nonce, HelperFailure(ImagingError(.processingFailed, detail: "\(type(of: error))")))
        }
    }
}
