import ArgumentParser
import AvatarWorker
import CropGeometry
import CropProtocol
import Foundation
import Imaging
import Logging
import RenderHelpers

/// `avatar-cropper crop`: renders one file locally, no infrastructure.
struct CropCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crop",
        abstract: "Render one avatar from a local image file.",
        discussion: """
            Without --scale or --rect the square is the face rule's (--default face: the faces found fill about \
            half of it; no face, the centred square) or the centred square at minimum zoom (--default centre). A pose (--scale, --tx, \
            --ty, in the editor's points) or a pixel square (--rect) is clamped exactly as the worker \
            clamps it. Extra sizes are written next to OUTPUT as NAME_<size>.<ext>.

            OUTPUT's extension says the format (.png, .jpg/.jpeg, .webp, .avif; docs/FORMATS.md); any other \
            extension is refused. --format is needed only for a name without one, and must agree with it.

            The editor's units: σ (--screen-scale) is the device's pixels per point, so at zoom 1 the \
            photo is W/σ × H/σ points on screen. s (--scale) is the zoom the user set: the photo is drawn \
            s times that size behind the circular mask of --mask-diameter points; s is clamped between the \
            zoom that leaves no blank space in the mask and --max-zoom times it (less when the source has \
            too few pixels for --size × --quality-multiplier). The crop is then (mask diameter)·σ/s source \
            pixels square. docs/ARCHITECTURE.md §1 has the whole derivation.

            \(CropExitCode.help)
            """
    )

    @Argument(help: "The source image (JPEG, PNG, WebP, HEIC/AVIF, GIF, TIFF).")
    var input: String

    @Option(name: .shortAndLong, help: "Where to write the avatar (written atomically).")
    var output: String

    @Option(help: "Editor zoom s: how many times larger than at zoom 1 the user made the photo.")
    var scale: Double?

    @Option(parsing: .unconditional, help: "Editor horizontal offset of the image in points (negative values allowed).")
    var tx: Double?

    @Option(parsing: .unconditional, help: "Editor vertical offset of the image in points (negative values allowed).")
    var ty: Double?

    @Option(help: "Mask diameter in points.")
    var maskDiameter: Double = 320

    @Option(help: "Screen scale σ: the device's pixels per point (3 on most phones).")
    var screenScale: Double = 3

    @Option(help: "Quality multiplier q: the crop must hold at least size × q source pixels across.")
    var qualityMultiplier: Double = 1.25

    @Option(help: "Maximum zoom as a multiple of the minimum zoom.")
    var maxZoom: Double = 4

    @Option(help: "The (oriented) image size the pose or rectangle refers to, WxH.")
    var referenceSize: String?

    @Option(help: "A square in pixels instead of a pose: X,Y,SIDE (top-left corner and side).")
    var rect: String?

    @Option(help: "Without a pose or rect: face (the face rule's square, centred when no face is found) or centre.")
    var `default`: DefaultCrop = DefaultCrop(rawValue: ConfigurationKey.defaultCrop.defaultValue ?? "") ?? .centre

    @Option(help: "The face detector's model file (default: the one installed beside this program).")
    var faceModel: String?

    @Option(help: "Avatar side in pixels.")
    var size: Int = 512

    @Option(help: "Output format: png, jpeg, webp or avif (default: from OUTPUT's extension, else png).")
    var format: AvatarFormat?

    @Option(help: "JPEG quality.")
    var quality: Int = 90

    @Option(help: "WebP quality, 1-100 (the worker's image.webp-quality).")
    var webpQuality: Int = EncoderSettings.defaultWebPQuality

    @Option(help: "AVIF quality, 1-100 (the worker's image.avif-quality).")
    var avifQuality: Int = EncoderSettings.defaultAVIFQuality

    @Option(help: "AV1 encoder speed, 0 (slowest) to 9 (the worker's image.avif-speed).")
    var avifSpeed: Int = EncoderSettings.defaultAVIFSpeed

    @Flag(help: "Render from a thumbnail-resolution decode (the memory fallback).")
    var fallback = false

    @Flag(help: "Print one JSON object (or {\"error\": ...}) to standard output.")
    var json = false

    @Option(name: .customLong("extra-size"), help: "Also render this size (repeatable).")
    var extraSizes: [Int] = []

    @Flag(help: "Also compute a BlurHash.")
    var blurhash = false

    @Option(help: "Background for transparent areas, #RRGGBB.")
    var background: String = "#FFFFFF"

    @Flag(
        help:
            "Render in this process instead of a sandboxed render helper (for debugging: a decoder crash then ends it)."
    )
    var inProcess = false

    func validate() throws {
        if rect != nil, scale != nil || tx != nil || ty != nil {
            throw ValidationError("--rect cannot be combined with --scale/--tx/--ty")
        }
        if scale == nil, tx != nil || ty != nil {
            throw ValidationError("--tx/--ty need --scale")
        }
        if referenceSize != nil, rect == nil, scale == nil {
            throw ValidationError("--reference-size needs a pose (--scale) or --rect")
        }
        _ = try cropInput()
        _ = try outputFormat()
        guard RGBColor(hex: background) != nil else {
            throw ValidationError("--background must be #RRGGBB")
        }
    }

    func run() throws {
        let logger = Logger(label: "avatar-cropper.crop") { StreamLogHandler.standardError(label: $0) }
        let options = try renderOptions()
        let crop = try cropInput()
        let bytes: [UInt8]
        do {
            bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: input)))
        } catch {
            throw fail(code: "io_error", message: "cannot read the input file", exitCode: CropExitCode.io)
        }

        let result: RenderResult
        do {
            result = try render(bytes, input: crop, options: options, logger: logger)
        } catch let error as ImagingError {
            // The user's sentence is the wire code's, from the one table (CropErrorCode.userMessage).
            throw fail(
                code: error.code.rawValue, message: CropErrorCode(error.code).userMessage,
                exitCode: CropExitCode.forCode(error.code))
        } catch is RenderHelperCrash {
            // The helper died (a decoder crashed on this file): the worker reports such a job as DECODE_FAILED.
            throw fail(
                code: ImagingError.Code.decodeFailed.rawValue, message: CropErrorCode.decodeFailed.userMessage,
                exitCode: CropExitCode.forCode(.decodeFailed))
        }

        var extras: [(Rendition, String)] = []
        do {
            try Data(result.avatar.data).write(to: URL(fileURLWithPath: output), options: .atomic)
            for extra in result.extras {
                let path = extraPath(size: extra.size, format: extra.format)
                try Data(extra.data).write(to: URL(fileURLWithPath: path), options: .atomic)
                extras.append((extra, path))
            }
        } catch {
            throw fail(code: "io_error", message: "cannot write the output", exitCode: CropExitCode.io)
        }

        if json {
            print(CropReport.json(result, extras: extras, settings: options.settings))
        } else {
            let avatar = result.avatar
            print(
                "\(output): \(avatar.size)x\(avatar.size) \(avatar.format.rawValue), \(avatar.data.count) bytes"
                    + (result.fallbackUsed ? " (fallback)" : ""))
            for (extra, path) in extras {
                print("\(path): \(extra.size)x\(extra.size), \(extra.data.count) bytes")
            }
            if let hash = result.blurHash { print("blurhash: \(hash)") }
        }
    }

    /// Probe and render as the worker does: in a render helper started from this binary (no environment, no
    /// descriptors but its channel, its address space capped), unless `--in-process`.
    private func render(
        _ bytes: [UInt8], input: CropInput, options: RenderOptions, logger: Logger
    ) throws -> RenderResult {
        let renders: Renders
        var pool: RenderHelperPool?
        let model = faceModel ?? FaceModel.defaultPath()
        if options.defaultCrop == .face, !inProcess, let error = FaceModel.problem(path: model) {
            // The helper would fall back to the centred square for every photo without saying so here.
            logger.warning("no face detection, the square will be centred: \(error.debugDescription)")
        }
        // One crop at a time: a HEIF grid's tiles decode on every core.
        let cores = try DecodeCores(count: ProcessInfo.processInfo.activeProcessorCount)
        if inProcess {
            try Vips.initialise()
            DecodeCores.install(cores)
            if options.defaultCrop == .face, let error = FaceDetectors.install(modelPath: model) {
                logger.warning("no face detection: \(error.debugDescription)")
            }
            renders = .inProcess
        } else {
            pool = try RenderHelperPool(
                launch: .init(faceModel: model, cores: cores), size: 1, logger: logger)
            renders = .helpers(pool!)
        }
        defer { pool?.shutdown() }
        let renderer = AvatarRenderer(logger: logger)
        let session = try renders.session(renderer: renderer, seams: nil)
        defer { session.end() }
        let probed = try session.probe(bytes, input: input, options: options, cancellation: nil)
        let estimate = options.forceFallback ? probed.estimate.fallback : probed.estimate.fullResolution
        return try session.render(fallback: false, reservedBytes: estimate, cancellation: nil)
    }

    // MARK: - Parsing

    func cropInput() throws -> CropInput {
        let reference = try referenceSize.map { text throws -> PixelSize in
            let parts = text.lowercased().split(separator: "x")
            guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]) else {
                throw ValidationError("--reference-size must be WxH, e.g. 1200x900")
            }
            return PixelSize(width: width, height: height)
        }
        if let rect {
            let parts = rect.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 3, let x = parts[0], let y = parts[1], let side = parts[2] else {
                throw ValidationError("--rect must be X,Y,SIDE, e.g. 100,50,800")
            }
            return .rect(PixelRect(x: x, y: y, side: side), reference: reference)
        }
        if let scale {
            return .pose(EditorPose(scale: scale, tx: tx ?? 0, ty: ty ?? 0), reference: reference)
        }
        return .centred
    }

    func renderOptions() throws -> RenderOptions {
        let settings = EditorSettings(
            screenScale: screenScale, maskDiameter: maskDiameter, outputSize: size,
            qualityMultiplier: qualityMultiplier, maxZoomMultiplier: maxZoom)
        return RenderOptions(
            settings: settings, format: try outputFormat(), jpegQuality: quality,
            encoder: EncoderSettings(webpQuality: webpQuality, avifQuality: avifQuality, avifSpeed: avifSpeed),
            background: RGBColor(hex: background) ?? .white, extraSizes: extraSizes, blurHash: blurhash,
            forceFallback: fallback, defaultCrop: `default`)
    }

    /// The format OUTPUT's extension names (or --format for a name without one, else PNG). An extension no format
    /// is written with, or one --format contradicts, is refused: never bytes of one format under another's name.
    func outputFormat() throws -> AvatarFormat {
        let name = URL(fileURLWithPath: output).lastPathComponent
        guard name.contains(".") else { return format ?? .png }
        guard let named = AvatarFormat(fileName: name) else {
            throw ValidationError(
                "cannot write \(output): its extension names no format this program writes (.png, .jpg, .jpeg, "
                    + ".webp, .avif)")
        }
        if let format, format != named {
            throw ValidationError("--format \(format.rawValue) contradicts \(output)'s extension")
        }
        return named
    }

    /// OUTPUT's directory and stem with `_<size>` and the format's extension (or OUTPUT's own).
    func extraPath(size: Int, format: AvatarFormat) -> String {
        let url = URL(fileURLWithPath: output)
        let ext = url.pathExtension.isEmpty ? format.fileExtension : url.pathExtension
        let stem = url.deletingPathExtension().lastPathComponent
        return url.deletingLastPathComponent().appendingPathComponent("\(stem)_\(size).\(ext)").path
    }

    /// Reports a failure (JSON on stdout with --json, else the message on stderr) and returns the exit.
    private func fail(code: String, message: String, exitCode: Int32) -> ExitCode {
        if json {
            print(CropReport.errorJSON(code: code, message: message))
        } else {
            FileHandle.standardError.write(Data("avatar-cropper: \(message)\n".utf8))
        }
        return ExitCode(exitCode)
    }
}

// `--format png|jpeg|webp|avif` for `crop` and `enqueue`: the raw values are the spellings.
extension AvatarFormat: ExpressibleByArgument {}

// `--default face|centre` for `crop`.
extension DefaultCrop: ExpressibleByArgument {}
