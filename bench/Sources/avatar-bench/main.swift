// avatar-bench: the Swift side of the benchmarks (bench/README.md). Every command takes --decode-cores N (below).
//
//   avatar-bench plan --job JOB.json              resolve the pose mix: prints the job with each pose's
//                                                 request and the plan's oriented pixel crop
//   avatar-bench run --job JOB.json [--concurrency N] [--save DIR] [--decoder automatic|libvips]
//                                                 render every pose (warm-up + runs), print JSON lines:
//                                                 one per pose (median ms, the decoder that ran) and one
//                                                 per image (peak RSS); --save writes each pose's last
//                                                 avatar as DIR/POSE.swift.png; --decoder libvips forces
//                                                 libvips' loader instead of the JPEG region decoder
//   avatar-bench throughput --jobs JOBS.json --root DIR [--threads N]
//                                                 render-only throughput of the end-to-end job list
//   avatar-bench helpers --mode in-process|helpers|paired --image PATH... --helper-binary PATH [--slots N]
//                        [--faces [--face-rule]] [--load-pairs N]
//                                                 what a render helper costs per job, at full load and in
//                                                 memory (HelperCost.swift; bench/bench-helpers.sh); paired:
//                                                 job by job and batch by batch against in-process
//                                                 (HelperPairedCost.swift)
//   avatar-bench faces --model PATH --image PATH... [--canvas-image PATH...] [--rounds N] [--runs N]
//                                                 a no-pose render with the face rule against the centred
//                                                 one, interleaved (FaceCost.swift; bench/bench-faces.sh)
//   avatar-bench formats --image PATH... [--runs N] [--rounds N] [--save DIR]
//                        [--webp-quality Q] [--avif-quality Q] [--avif-speed S]
//                                                 each format's bytes and encode CPU per 512² avatar, and a
//                                                 PNG-only job against PNG + WebP + AVIF + WebP at 128, interleaved
//                                                 (FormatCost.swift; bench/bench-formats.sh)
import CropGeometry
import FoundationEssentials
import Glibc
@_spi(Benchmark) import Imaging
import Logging
@_spi(Benchmark) import RenderHelpers

// A render helper this binary started (`helpers --helper-binary` naming it: the bench's helpers then run the bench's
// own binary, as a worker's run the worker's, so the two share its pages as a worker and its helpers do).
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == RenderHelperPool.Launch.subcommand {
    exit(RenderHelperServer.run(arguments: Array(CommandLine.arguments.dropFirst(2))))
}

struct PoseRecord: Encodable {
    var type = "pose"
    var impl = "swift"
    var image: String
    var pose: String
    var crop: CropJSON
    var ms: [Double]
    var ms_median: Double
    var output_bytes: Int
    var shrink: Int
    var decode_width: Int
    var decode_height: Int
    var fallback: Bool
    /// Which decoder produced the pixels: "jpeg-region", or "libvips:" and why ("libvips:multi-scan").
    var decoder: String
    /// Median of each stage over the timed runs (probe, plan, decode, encode, total).
    var stages_ms: [String: Double]
}

struct ImageRecord: Encodable {
    var type = "image"
    var impl = "swift"
    var image: String
    var baseline_mb: Double
    var peak_mb: Double
    var peak_above_baseline_mb: Double
    var libvips: String
    var concurrency: Int
}

func readJob(_ path: String) throws -> Job {
    try JSONDecoder().decode(Job.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
}

/// Reads a file straight into one array (no intermediate `Data`, whose transient second copy would
/// count in the peak RSS; the Python references hold exactly one `bytes` object too).
func readBytes(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw BenchError("cannot open \(path)") }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw BenchError("cannot stat \(path)") }
    let size = Int(info.st_size)
    let bytes = try [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
        var done = 0
        while done < size {
            let n = read(fd, buffer.baseAddress! + done, size - done)
            guard n > 0 else { throw BenchError("short read of \(path)") }
            done += n
        }
        count = done
    }
    return bytes
}

func plan(jobPath: String, renderer: AvatarRenderer) throws {
    var job = try readJob(jobPath)
    let header = try renderer.probe(try readBytes(job.image)).header
    let settings = EditorSettings(outputSize: job.output ?? 512)
    for index in job.poses.indices {
        let input = try PoseMix.input(for: job.poses[index].spec, source: header.orientedSize, settings: settings)
        let plan = try CropGeometry.plan(source: header.orientedSize, input: input.cropInput, settings: settings)
        job.poses[index].input = input
        job.poses[index].crop = CropJSON(plan.pixelCrop)
    }
    emit(job)
}

func run(
    jobPath: String, renderer: AvatarRenderer, concurrency: Int, saveDirectory: String?,
    decoders: DecoderPreference = .automatic
) throws {
    let baseline = ProcessMemory.residentKiB()
    let job = try readJob(jobPath)
    let bytes = try readBytes(job.image)
    var options = RenderOptions(settings: EditorSettings(outputSize: job.output ?? 512), format: .png)
    options.decoderPreference = decoders
    let warmup = job.warmup ?? 1
    for pose in job.poses {
        guard let input = pose.input?.cropInput, let expected = pose.crop else {
            throw BenchError("pose \(pose.name) has no input: run `avatar-bench plan` first")
        }
        var times: [Double] = []
        var stages: [String: [Double]] = [:]
        var last: RenderResult?
        let clock = ContinuousClock()
        for iteration in 0..<(warmup + job.runs) {
            let start = clock.now
            // Probe and render, as a job does: the timing covers reading the header too.
            let result = try renderer.render(renderer.probe(bytes), input: input, options: options)
            let elapsed = (clock.now - start).ms
            if iteration >= warmup {
                times.append(elapsed)
                for (stage, value) in result.timings.milliseconds { stages[stage, default: []].append(value) }
            }
            last = result
        }
        guard let result = last else { continue }
        guard CropJSON(result.plan.pixelCrop) == expected else {
            throw BenchError("pose \(pose.name): rendered crop differs from the planned one")
        }
        if let saveDirectory {
            try Data(result.avatar.data).write(to: URL(fileURLWithPath: "\(saveDirectory)/\(pose.name).swift.png"))
        }
        emit(
            PoseRecord(
                image: job.image, pose: pose.name, crop: expected, ms: times, ms_median: median(times),
                output_bytes: result.avatar.data.count, shrink: result.shrinkFactor,
                decode_width: result.decodeSize.width, decode_height: result.decodeSize.height,
                fallback: result.fallbackUsed, decoder: result.decoder.description,
                stages_ms: stages.mapValues(median)))
    }
    let peak = ProcessMemory.peakKiB()
    emit(
        ImageRecord(
            image: job.image, baseline_mb: Double(baseline) / 1024, peak_mb: Double(peak) / 1024,
            peak_above_baseline_mb: Double(peak - baseline) / 1024, libvips: Vips.version,
            concurrency: concurrency))
}

func usage() -> Never {
    printError(
        "usage: avatar-bench plan|run --job JOB.json [--concurrency N] [--save DIR] [--decoder automatic|libvips]\n"
            + "       avatar-bench throughput --jobs JOBS.json --root DIR [--threads N]\n"
            + "       avatar-bench helpers --mode in-process|helpers|paired --image PATH... --helper-binary PATH")
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())

/// The value after `flag`, if any.
func option(_ flag: String) -> String? {
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

// Every command: --decode-cores N, the cores renders and a HEIF grid's extra tile threads share (`DecodeCores`, the
// worker's worker.decode-cores); default this machine's CPU cores, as the worker; 1: each render decodes alone.
let decodeCores = option("--decode-cores").flatMap(Int.init) ?? ProcessInfo.processInfo.activeProcessorCount
if decodeCores > 1 {
    do {
        DecodeCores.install(try DecodeCores(count: decodeCores))
    } catch {
        print("avatar-bench: \(error)")
        exit(1)
    }
}

if arguments.first == "throughput" {
    guard let jobs = option("--jobs"), let root = option("--root") else {
        printError("usage: avatar-bench throughput --jobs JOBS.json --root DIR [--threads N]")
        exit(2)
    }
    do {
        try Vips.initialise(concurrency: 1)
        let renderer = AvatarRenderer(logger: Logger(label: "avatar-bench"))
        try throughput(
            jobsPath: jobs, root: root, threads: option("--threads").flatMap(Int.init) ?? 2, renderer: renderer)
        exit(0)
    } catch {
        printError("avatar-bench: \(error)")
        exit(1)
    }
}

if arguments.first == "helpers" {
    let images = arguments.indices.filter { arguments[$0] == "--image" && $0 + 1 < arguments.count }
        .map { arguments[$0 + 1] }
    guard let mode = option("--mode"), let helperBinary = option("--helper-binary"), !images.isEmpty else {
        printError(
            "usage: avatar-bench helpers --mode in-process|helpers|paired --image PATH... --helper-binary PATH "
                + "[--slots N] [--jobs N] [--full-load-seconds S] [--rounds N] [--starts N] [--faces [--face-rule]] "
                + "[--load-pairs N]"
        )
        exit(2)
    }
    do {
        try Vips.initialise(concurrency: 1)
        if mode == "paired" {
            try pairedHelperCost(
                images: images, helperBinary: helperBinary, slots: option("--slots").flatMap(Int.init) ?? 2,
                pairs: option("--rounds").flatMap(Int.init) ?? 200,
                loadPairs: option("--load-pairs").flatMap(Int.init) ?? 6,
                faceModel: arguments.contains("--faces") ? FaceModel.defaultPath(executable: helperBinary) : nil,
                logger: Logger(label: "avatar-bench"))
            exit(0)
        }
        try helperCost(
            mode: mode, images: images, helperBinary: helperBinary, slots: option("--slots").flatMap(Int.init) ?? 2,
            jobs: option("--jobs").flatMap(Int.init) ?? 24,
            fullLoadSeconds: option("--full-load-seconds").flatMap(Double.init) ?? 0,
            rounds: option("--rounds").flatMap(Int.init) ?? 9,
            starts: option("--starts").flatMap(Int.init),
            faceModel: arguments.contains("--faces") ? FaceModel.defaultPath(executable: helperBinary) : nil,
            faceRule: arguments.contains("--face-rule"), logger: Logger(label: "avatar-bench"))
        exit(0)
    } catch {
        printError("avatar-bench: \(error)")
        exit(1)
    }
}

if arguments.first == "formats" {
    let images = arguments.indices.filter { arguments[$0] == "--image" && $0 + 1 < arguments.count }
        .map { arguments[$0 + 1] }
    guard !images.isEmpty else {
        printError("usage: avatar-bench formats --image PATH... [--runs N] [--rounds N] [--save DIR]")
        exit(2)
    }
    do {
        try Vips.initialise(concurrency: 1)
        let defaults = EncoderSettings()
        try formatCost(
            images: images, runs: option("--runs").flatMap(Int.init) ?? 7,
            rounds: option("--rounds").flatMap(Int.init) ?? 6,
            encoder: EncoderSettings(
                webpQuality: option("--webp-quality").flatMap(Int.init) ?? defaults.webpQuality,
                avifQuality: option("--avif-quality").flatMap(Int.init) ?? defaults.avifQuality,
                avifSpeed: option("--avif-speed").flatMap(Int.init) ?? defaults.avifSpeed),
            save: option("--save"), logger: Logger(label: "avatar-bench"))
        exit(0)
    } catch {
        printError("avatar-bench: \(error)")
        exit(1)
    }
}

if arguments.first == "faces" {
    func values(_ name: String) -> [String] {
        arguments.indices.filter { arguments[$0] == name && $0 + 1 < arguments.count }.map { arguments[$0 + 1] }
    }
    let images = values("--image")
    guard let model = option("--model"), !images.isEmpty else {
        printError(
            "usage: avatar-bench faces --model PATH --image PATH... [--canvas-image PATH...] [--rounds N] [--runs N]")
        exit(2)
    }
    do {
        try Vips.initialise(concurrency: 1)
        try faceCost(
            images: images, canvasImages: values("--canvas-image"), model: model,
            rounds: option("--rounds").flatMap(Int.init) ?? 5,
            runs: option("--runs").flatMap(Int.init) ?? 3, logger: Logger(label: "avatar-bench"))
        exit(0)
    } catch {
        printError("avatar-bench: \(error)")
        exit(1)
    }
}

guard let command = arguments.first, let jobIndex = arguments.firstIndex(of: "--job"),
    jobIndex + 1 < arguments.count
else { usage() }
let jobPath = arguments[jobIndex + 1]
var concurrency = 1
var saveDirectory: String?
if let index = arguments.firstIndex(of: "--save"), index + 1 < arguments.count {
    saveDirectory = arguments[index + 1]
}
if let index = arguments.firstIndex(of: "--concurrency"), index + 1 < arguments.count,
    let value = Int(arguments[index + 1])
{
    concurrency = value
}
var decoders = DecoderPreference.automatic
if let value = option("--decoder") {
    guard let preference = DecoderPreference(rawValue: value) else { usage() }
    decoders = preference
}

do {
    try Vips.initialise(concurrency: concurrency)
    let renderer = AvatarRenderer(logger: Logger(label: "avatar-bench"))
    switch command {
    case "plan": try plan(jobPath: jobPath, renderer: renderer)
    case "run":
        try run(
            jobPath: jobPath, renderer: renderer, concurrency: Vips.concurrency, saveDirectory: saveDirectory,
            decoders: decoders)
    default: usage()
    }
} catch {
    printError("avatar-bench: \(error)")
    exit(1)
}
