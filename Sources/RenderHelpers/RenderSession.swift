import CropGeometry
import Glibc
import Imaging

/// What the probe of a job's photo found: its header, and the memory its render is expected to need
/// (`MemoryAdmission`), computed where the bytes were read.
public struct ProbeResult: Sendable, Codable {
    public var header: ImageHeader
    public var estimate: MemoryEstimate
}

/// A render helper died during a job (a native crash of a decoder, or the job's own memory cap hit inside a
/// library that aborts): the job fails, the worker does not (docs/ARCHITECTURE.md §3, "Render helpers").
public struct RenderHelperCrash: Error, Sendable, CustomStringConvertible {
    /// The signal that killed the helper; nil when it exited (or broke the protocol) instead.
    public var signal: Int32?
    public var exitStatus: Int32

    public var description: String {
        if let signal { return "the render helper died of signal \(signal) (\(RenderHelperCrash.name(of: signal)))" }
        return "the render helper ended unexpectedly (exit status \(exitStatus))"
    }

    /// "SIGSEGV", "SIGABRT", …, or "signal N": the label of the helper-deaths counter.
    public static func name(of signal: Int32) -> String {
        switch signal {
        case SIGSEGV: "SIGSEGV"
        case SIGBUS: "SIGBUS"
        case SIGABRT: "SIGABRT"
        case SIGILL: "SIGILL"
        case SIGTRAP: "SIGTRAP"
        case SIGFPE: "SIGFPE"
        case SIGKILL: "SIGKILL"
        case SIGSYS: "SIGSYS"
        default: "signal \(signal)"
        }
    }
}

/// No render helper could be started for a job (the binary cannot run its `render-helper`): the job fails
/// transiently, through no fault of its photo.
public struct RenderHelperUnavailable: Error, Sendable, CustomStringConvertible {
    public var description: String
}

/// One job's render, probe then render, wherever it runs (`Renders`): in a helper process, or in this one
/// (`crop --in-process`, and the helper itself). Used by one thread; `end()` once, whatever happened.
///
/// Errors: `ImagingError` (the render's own; `.cancelled` when `cancellation` stopped it, the helper then
/// killed), `RenderHelperCrash`, `RenderHelperUnavailable`, or `HelperSystemError` (the channel itself failed).
public protocol RenderSession: AnyObject {
    func probe(
        _ source: [UInt8], input: CropInput, options: RenderOptions, cancellation: RenderCancellation?
    ) throws -> ProbeResult

    /// Renders what `probe` read, on the thumbnail-resolution fallback when `fallback`; `reservedBytes` is the
    /// job's memory admission, which caps a helper's address space.
    func render(fallback: Bool, reservedBytes: Int, cancellation: RenderCancellation?) throws -> RenderResult

    func end()
}

/// Renders in the calling process: the helper's own work, and `crop --in-process` for debugging.
final class InProcessRenderSession: RenderSession {
    private let renderer: AvatarRenderer
    private let seams: RenderTestSeams?
    /// `source` is kept only for the test seams (which look for markers in it).
    private var probed: (image: ProbedImage, source: [UInt8]?, input: CropInput, options: RenderOptions)?

    init(renderer: AvatarRenderer, seams: RenderTestSeams?) {
        self.renderer = renderer
        self.seams = seams
    }

    func probe(
        _ source: [UInt8], input: CropInput, options: RenderOptions, cancellation: RenderCancellation?
    ) throws -> ProbeResult {
        probed(try renderer.probe(source, cancellation: cancellation), source: source, input: input, options: options)
    }

    /// `probe` of the first `length` bytes of the memory file `file`, read where they lie (a helper's source: no
    /// copy). The file may be closed once this returns.
    func probe(mapping file: MemoryFile, length: Int, input: CropInput, options: RenderOptions) throws -> ProbeResult {
        let image = try renderer.probe(mappingFile: file.descriptor, count: length)
        return probed(
            image, source: seams == nil ? nil : try file.read(offset: 0, length: length), input: input,
            options: options)
    }

    private func probed(_ image: ProbedImage, source: [UInt8]?, input: CropInput, options: RenderOptions)
        -> ProbeResult
    {
        probed = (image, source, input, options)
        return ProbeResult(
            header: image.header,
            estimate: MemoryAdmission.estimate(header: image.header, options: options, input: input))
    }

    func render(fallback: Bool, reservedBytes: Int, cancellation: RenderCancellation?) throws -> RenderResult {
        guard let probed else { throw ImagingError(.invalidRequest, detail: "render before probe") }
        if let seams, let source = probed.source { try seams.beforeRender(source) }
        return try renderer.render(
            probed.image, input: probed.input, options: probed.options, fallback: fallback, cancellation: cancellation)
    }

    func end() {
        probed = nil
    }
}

/// Where a worker's or `crop`'s renders run.
public enum Renders: Sendable {
    /// In helper processes (production).
    case helpers(RenderHelperPool)
    /// In this process (`crop --in-process`, for debugging; a crash in a decoder ends the process).
    case inProcess

    /// A session for one job. `seams` are TEST-ONLY (nil in production).
    public func session(renderer: AvatarRenderer, seams: RenderTestSeams?) throws -> any RenderSession {
        switch self {
        case .helpers(let pool): try pool.session(limits: renderer.limits, seams: seams)
        case .inProcess: InProcessRenderSession(renderer: renderer, seams: seams)
        }
    }
}
