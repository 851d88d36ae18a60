import CropGeometry
import Dispatch
import FoundationEssentials
import Glibc
import Imaging
import Logging
import RenderHelpers
import Synchronization

/// `avatar-bench helpers --mode in-process|helpers --image PATH [--image PATH …] --helper-binary PATH
/// [--slots N] [--jobs N] [--rounds N]`: what rendering in a sandboxed helper costs against rendering in the
/// worker's own process (sandboxed-render issue; bench/README.md, "Render helpers: the cost"). One process per
/// mode, the script alternating them, so each mode's peak memory is its own. Per image, as the worker runs a
/// job (probe, then render, centred pose, PNG + BlurHash + one extra size): the median of `--rounds` lone jobs
/// (one in flight: the IPC and memory-file hand-over added per job); jobs/s with `--slots` threads busy (full
/// load); then the peak RSS of the whole (this process plus, in helper mode, every helper: the sum of their
/// high-water marks, which counts the shared libraries once per helper, and their proportional set size at the
/// end). In helper mode also the time to start a helper and have it ready (a replacement's cost).
struct HelperCostRecord: Encodable {
    var type = "helper-cost"
    var mode: String
    var image: String
    var slots: Int
    var lone_ms: [Double]
    var lone_ms_median: Double
    var full_load_jobs: Int
    var full_load_jobs_per_s: Double
}

struct HelperMemoryRecord: Encodable {
    var type = "helper-memory"
    var mode: String
    var slots: Int
    var helpers: Int
    var process_peak_mb: Double
    var helpers_peak_mb: Double
    var whole_peak_mb: Double
    var whole_pss_mb: Double
    var helper_start_ms: [Double]
}

func helperCost(
    mode: String, images: [String], helperBinary: String, slots: Int, jobs: Int, rounds: Int, logger: Logger
) throws {
    let renderer = AvatarRenderer(logger: logger)
    var starts: [Double] = []
    let renders: Renders
    var pool: RenderHelperPool?
    switch mode {
    case "in-process":
        renders = .inProcess
    case "helpers":
        // The cores the in-process renders share (--decode-cores), shared by the helpers as a worker shares them.
        let launch = RenderHelperPool.Launch(
            executable: helperBinary, vipsConcurrency: 1, cores: DecodeCores.installed)
        // A replacement's cost: spawn, warm-up render, lockdown, `ready` (a pool of one waits for its helper).
        let clock = ContinuousClock()
        for _ in 0..<rounds {
            let began = clock.now
            let single = try RenderHelperPool(launch: launch, size: 1, logger: logger)
            starts.append((clock.now - began).ms)
            single.shutdown()
        }
        // As the worker: one helper per slot plus the spare.
        let workerPool = try RenderHelperPool(launch: launch, size: slots + 1, logger: logger)
        while workerPool.liveHelpers < slots + 1 { usleep(10_000) }
        usleep(1_000_000)  // the background starts finish their warm-up
        pool = workerPool
        renders = .helpers(workerPool)
    default:
        throw BenchError("--mode is in-process or helpers")
    }
    defer { pool?.shutdown() }
    let options = RenderOptions(extraSizes: [128], blurHash: true)

    @Sendable func job(_ source: [UInt8]) throws {
        let session = try renders.session(renderer: renderer, seams: nil)
        defer { session.end() }
        let probed = try session.probe(source, input: .centred, options: options, cancellation: nil)
        _ = try session.render(fallback: false, reservedBytes: probed.estimate.fullResolution, cancellation: nil)
    }

    for path in images {
        let source = try readBytes(path)
        try job(source)  // warm-up
        let clock = ContinuousClock()
        var lone: [Double] = []
        for _ in 0..<rounds {
            let began = clock.now
            try job(source)
            lone.append((clock.now - began).ms)
        }
        let next = Mutex(0)
        let failures = Mutex(0)
        let began = clock.now
        DispatchQueue.concurrentPerform(iterations: slots) { _ in
            while next.withLock({ value -> Int in
                defer { value += 1 }
                return value
            }) < jobs {
                do { try job(source) } catch { failures.withLock { $0 += 1 } }
            }
        }
        let seconds = (clock.now - began).ms / 1000
        if failures.withLock({ $0 }) > 0 { throw BenchError("\(failures.withLock { $0 }) jobs failed on \(path)") }
        emit(
            HelperCostRecord(
                mode: mode, image: path, slots: slots, lone_ms: lone, lone_ms_median: median(lone),
                full_load_jobs: jobs, full_load_jobs_per_s: Double(jobs) / seconds))
    }

    let helpers = ChildProcesses.pids()
    let helperPeak = helpers.map { ChildProcesses.statusKiB($0, "VmHWM") }.reduce(0, +)
    let processPeak = ProcessMemory.peakKiB()
    let pss = ([getpid()] + helpers).map(ChildProcesses.pssKiB).reduce(0, +)
    emit(
        HelperMemoryRecord(
            mode: mode, slots: slots, helpers: helpers.count, process_peak_mb: Double(processPeak) / 1024,
            helpers_peak_mb: Double(helperPeak) / 1024, whole_peak_mb: Double(processPeak + helperPeak) / 1024,
            whole_pss_mb: Double(pss) / 1024, helper_start_ms: starts))
}

/// This process's children (its helpers), and what /proc says of their memory, in KiB.
enum ChildProcesses {
    static func pids() -> [pid_t] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.flatMap { task -> [pid_t] in
            let text = (try? String(contentsOfFile: "/proc/self/task/\(task)/children", encoding: .utf8)) ?? ""
            return text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { pid_t($0) }
        }
    }

    static func statusKiB(_ pid: pid_t, _ name: String) -> Int {
        max(0, ProcessMemory.field(name, in: "/proc/\(pid)/status"))
    }

    /// Proportional set size: shared pages divided among the processes that map them.
    static func pssKiB(_ pid: pid_t) -> Int {
        max(0, ProcessMemory.field("Pss", in: "/proc/\(pid)/smaps_rollup"))
    }
}
