import CropGeometry
import Dispatch
import FoundationEssentials
import Glibc
import Imaging
import Logging
import RenderHelpers
import Synchronization

/// `avatar-bench helpers --mode in-process|helpers --image PATH [--image PATH …] --helper-binary PATH
/// [--slots N] [--jobs N] [--full-load-seconds S] [--rounds N] [--starts N] [--faces [--face-rule]]` (the full-load
/// pass runs at least `--jobs` jobs and for at least S seconds, default 0; starts: how many first helpers and
/// replacements are timed, default the rounds; `--faces`: the face model installed beside the helper binary, where
/// the worker finds it, loaded and warmed up in both modes as a worker does by default; `--face-rule`: every job
/// without a pose and framed on its faces, so each process meets every canvas its photos ask for): what
/// rendering in a sandboxed helper costs against rendering in the
/// worker's own process (sandboxed-render issue; bench/README.md, "Render helpers"). One process per
/// mode, the script alternating them, so each mode's peak memory is its own. Per image, as the worker runs a
/// job (probe, then render, centred pose, PNG + BlurHash + one extra size): the median of `--rounds` lone jobs
/// (one in flight: the IPC and memory-file hand-over added per job), back to back and then each `idleGap` after the
/// last one ended (low load: an idle worker gets a job); jobs/s with `--slots` threads busy (full
/// load); then the peak RSS of the whole (this process plus, in helper mode, every helper: the sum of their
/// high-water marks, which counts the shared libraries once per helper, and their proportional set size at rest,
/// 2 s after the last job, when idle helpers have given their free heap back), and the most the whole held at once as
/// PSS, sampled through a second full-load pass (`PeakPSS`). In helper mode also the time to start a pool's first
/// helper (its template's start included) and to replace one (forked from the running template: a replacement's
/// cost).
struct HelperCostRecord: Encodable {
    var type = "helper-cost"
    var mode: String
    var image: String
    var slots: Int
    var lone_ms: [Double]
    var lone_ms_median: Double
    /// Lone jobs at low load: each started `idleGap` after the last one ended.
    var idle_lone_ms: [Double]
    var idle_lone_ms_median: Double
    /// CPU time (user and system) of the whole process tree per lone job: this process, the template and every
    /// helper (ended ones included), all threads, over the lone rounds. Less sensitive to a busy machine than the
    /// lone job's wall time.
    var lone_cpu_ms_per_job: Double
    var full_load_jobs: Int
    var full_load_jobs_per_s: Double
}

/// The pause before each lone job at low load: longer than a helper's replacement and its rehearsal take
/// (bench/RESULTS.md, "One job per helper"), as between two users' jobs on a quiet worker.
let idleGap: useconds_t = 100_000

struct HelperMemoryRecord: Encodable {
    var type = "helper-memory"
    var mode: String
    var slots: Int
    var helpers: Int
    var process_peak_mb: Double
    var helpers_peak_mb: Double
    var whole_peak_mb: Double
    var whole_pss_mb: Double
    /// The most the whole (this process and every helper) held at once while the jobs ran, as proportional set
    /// size (shared pages counted once across the processes): sampled every `PeakPSS.interval`.
    var whole_pss_peak_mb: Double
    var helper_start_ms: [Double]
    var helper_replace_ms: [Double]
}

func helperCost(
    mode: String, images: [String], helperBinary: String, slots: Int, jobs: Int, fullLoadSeconds: Double, rounds: Int,
    starts startRounds: Int?,
    faceModel: String?, faceRule: Bool, logger: Logger
) throws {
    let renderer = AvatarRenderer(logger: logger)
    var starts: [Double] = []
    var replacements: [Double] = []
    let renders: Renders
    var pool: RenderHelperPool?
    switch mode {
    case "in-process":
        renders = .inProcess
        try startInProcess(renderer, faceModel: faceModel)
    case "helpers":
        // The cores the in-process renders share (--decode-cores), shared by the helpers as a worker shares them.
        let launch = RenderHelperPool.Launch(
            executable: helperBinary, vipsConcurrency: 1, faceModel: faceModel, cores: DecodeCores.installed)
        // A first helper's cost: the template's spawn, the fork, warm-up render, lockdown, `ready` (a pool of one
        // waits for its helper).
        let clock = ContinuousClock()
        for _ in 0..<(startRounds ?? rounds) {
            let began = clock.now
            let single = try RenderHelperPool(launch: launch, size: 1, logger: logger)
            starts.append((clock.now - began).ms)
            single.shutdown()
        }
        // A replacement's cost, as a worker meets it: its idle helper killed, the next job's helper forked from the
        // running template and ready (the pool starts the dead one's replacement in the background at the same time,
        // so two starts share the cores: a pessimistic figure).
        let single = try RenderHelperPool(launch: launch, size: 1, logger: logger)
        try waitForSteadyState(single, logger: logger)
        for _ in 0..<(startRounds ?? rounds) {
            usleep(1_000_000)  // the last round's background start is done
            for helper in ChildProcesses.pids() where ChildProcesses.isHelper(helper) {
                kill(helper, SIGKILL)
                ChildProcesses.waitUntilDead(helper)
            }
            let began = clock.now
            let session = try Renders.helpers(single).session(renderer: renderer, seams: nil)
            replacements.append((clock.now - began).ms)
            session.end()
        }
        single.shutdown()
        let workerPool = try startWorkerPool(launch: launch, slots: slots, logger: logger)
        pool = workerPool
        renders = .helpers(workerPool)
    default:
        throw BenchError("--mode is in-process or helpers")
    }
    defer { pool?.shutdown() }

    @Sendable func job(_ source: [UInt8]) throws {
        try runJob(source, on: renders, renderer: renderer, faceRule: faceRule)
    }
    func fullLoad(_ source: [UInt8], seconds: Double = 0) -> (jobs: Int, seconds: Double, failures: Int) {
        timeAtFullLoad(jobs: jobs, seconds: seconds, slots: slots) { try job(source) }
    }

    for path in images {
        let source = try readBytes(path)
        try job(source)  // warm-up
        let clock = ContinuousClock()
        /// `rounds` lone jobs' wall times, each after `pause` microseconds.
        func loneJobs(pause: useconds_t) throws -> [Double] {
            try (0..<rounds).map { _ in
                if pause > 0 { usleep(pause) }
                let began = clock.now
                try job(source)
                return (clock.now - began).ms
            }
        }
        let cpuBefore = ChildProcesses.treeCPUMilliseconds()
        let lone = try loneJobs(pause: 0)
        let cpuPerJob = (ChildProcesses.treeCPUMilliseconds() - cpuBefore) / Double(rounds)
        let idleLone = try loneJobs(pause: idleGap)
        let (ran, seconds, failures) = fullLoad(source, seconds: fullLoadSeconds)
        if failures > 0 { throw BenchError("\(failures) jobs failed on \(path)") }
        emit(
            HelperCostRecord(
                mode: mode, image: path, slots: slots, lone_ms: lone, lone_ms_median: median(lone),
                idle_lone_ms: idleLone, idle_lone_ms_median: median(idleLone),
                lone_cpu_ms_per_job: cpuPerJob,
                full_load_jobs: ran, full_load_jobs_per_s: Double(ran) / seconds))
    }

    // The most held at once, on its own pass: sampling PSS takes each process's memory-map lock, which the jobs'
    // page faults and mappings wait for, so the timed runs above go unsampled.
    let peakPSS = PeakPSS()
    for path in images { _ = fullLoad(try readBytes(path)) }
    let pssPeak = peakPSS.stop()
    // At rest: idle helpers give their free heap back after a second (`RenderHelperServer.idleTrimDelay`).
    usleep(2_000_000)
    let helpers = ChildProcesses.pids()
    let helperPeak = helpers.map { ChildProcesses.statusKiB($0, "VmHWM") }.reduce(0, +)
    let processPeak = ProcessMemory.peakKiB()
    let pss = ([getpid()] + helpers).map(ChildProcesses.pssKiB).reduce(0, +)
    emit(
        HelperMemoryRecord(
            mode: mode, slots: slots, helpers: helpers.count, process_peak_mb: Double(processPeak) / 1024,
            helpers_peak_mb: Double(helperPeak) / 1024, whole_peak_mb: Double(processPeak + helperPeak) / 1024,
            whole_pss_mb: Double(pss) / 1024, whole_pss_peak_mb: Double(pssPeak) / 1024, helper_start_ms: starts,
            helper_replace_ms: replacements))
}

/// The largest proportional set size of this process and its children together, sampled on a thread of its own
/// from creation until `stop` (KiB). Summing each process's resident set would count the libraries every helper
/// maps once per helper; PSS divides each shared page among the processes that map it.
final class PeakPSS: Sendable {
    static let interval: useconds_t = 100_000
    private let state = Mutex((peak: 0, running: true))
    private let done = DispatchSemaphore(value: 0)

    init() {
        DispatchQueue.global().async { [self] in
            while state.withLock({ $0.running }) {
                let now = ([getpid()] + ChildProcesses.pids()).map(ChildProcesses.pssKiB).reduce(0, +)
                state.withLock { $0.peak = max($0.peak, now) }
                usleep(Self.interval)
            }
            done.signal()
        }
    }

    func stop() -> Int {
        state.withLock { $0.running = false }
        done.wait()
        return state.withLock { $0.peak }
    }
}

/// Runs of `job` on `slots` threads, as a full worker's render slots take them, until `jobs` have started and
/// `seconds` have passed: how many ran, the time in seconds and how many failed.
func timeAtFullLoad(jobs: Int, seconds: Double = 0, slots: Int, _ job: @Sendable () throws -> Void)
    -> (jobs: Int, seconds: Double, failures: Int)
{
    let next = Mutex(0)
    let failures = Mutex(0)
    let firstFailure = Mutex<String?>(nil)
    let clock = ContinuousClock()
    let began = clock.now
    let until = began + .milliseconds(Int(seconds * 1000))
    DispatchQueue.concurrentPerform(iterations: slots) { _ in
        while next.withLock({ value -> Bool in
            guard value < jobs || clock.now < until else { return false }
            value += 1
            return true
        }) {
            do {
                try job()
            } catch {
                failures.withLock { $0 += 1 }
                firstFailure.withLock { $0 = $0 ?? "\(error)" }
            }
        }
    }
    if let failure = firstFailure.withLock({ $0 }) {
        let line = "avatar-bench: a job failed: \(failure)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }
    return (next.withLock { $0 }, (clock.now - began).ms / 1000, failures.withLock { $0 })
}

/// A pool as a worker has one in its steady state: its template ready, and one helper per slot plus the spare, each
/// forked from it (the helpers a pool starts with are spawned while its template warms up: they are replaced).
func startWorkerPool(launch: RenderHelperPool.Launch, slots: Int, logger: Logger) throws -> RenderHelperPool {
    let pool = try RenderHelperPool(launch: launch, size: slots + 1, logger: logger)
    try waitForSteadyState(pool, logger: logger)
    return pool
}

/// With a face model, starts this process as a worker rendering in its own process would: the model loaded and the
/// warm-up render (a no-pose one: the detector's network built and run once), as every helper's template does
/// before it forks.
func startInProcess(_ renderer: AvatarRenderer, faceModel: String?) throws {
    guard let faceModel else { return }
    if let error = FaceDetectors.install(modelPath: faceModel) {
        throw BenchError("face model: \(error.debugDescription)")
    }
    try renderer.warmUp()
}

/// Waits for `pool`'s template to be ready, then replaces its helpers by forked ones.
func waitForSteadyState(_ pool: RenderHelperPool, logger: Logger) throws {
    guard pool.waitForTemplate(timeout: .seconds(120)) else { throw BenchError("the helper template is not ready") }
    while pool.liveHelpers < pool.size { usleep(10_000) }
    for helper in ChildProcesses.pids() where ChildProcesses.isHelper(helper) {
        kill(helper, SIGKILL)
        ChildProcesses.waitUntilDead(helper)
    }
    // Each killed helper's replacement is started when the pool next looks at it: one session per helper.
    for _ in 0..<pool.size {
        try? Renders.helpers(pool).session(renderer: AvatarRenderer(logger: logger), seams: nil).end()
    }
    while pool.liveHelpers < pool.size { usleep(10_000) }
    usleep(1_000_000)  // the background starts are done
}

/// One job as the worker runs it (probe, then render at full resolution; centred pose, PNG, BlurHash and one
/// extra size) through `renders`.
func runJob(_ source: [UInt8], on renders: Renders, renderer: AvatarRenderer, faceRule: Bool = false) throws {
    let options = RenderOptions(extraSizes: [128], blurHash: true, defaultCrop: faceRule ? .face : .centre)
    let session = try renders.session(renderer: renderer, seams: nil)
    defer { session.end() }
    let probed = try session.probe(source, input: .centred, options: options, cancellation: nil)
    _ = try session.render(fallback: false, reservedBytes: probed.estimate.fullResolution, cancellation: nil)
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

    /// A render helper (not the template it is forked from): its command line's subcommand.
    static func isHelper(_ pid: pid_t) -> Bool {
        let line = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
        return line.split(separator: "\0").dropFirst().first.map(String.init) == RenderHelperPool.Launch.subcommand
    }

    /// Waits until `pid` has ended (a zombie with no thread left, or gone).
    static func waitUntilDead(_ pid: pid_t) {
        for _ in 0..<500 {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            if status.isEmpty || (status.contains("State:\tZ") && status.contains("Threads:\t1\n")) { return }
            usleep(10_000)
        }
    }

    /// CPU time of the whole tree so far, in milliseconds: this process and its live children (every thread, ended
    /// ones included: each process's CPU-time clock, `clock_getcpuclockid`, which a zombie still answers), the
    /// children it reaped (`getrusage(RUSAGE_CHILDREN)`: the helpers its pool killed), and the children its live
    /// children reaped (their `cutime` and `cstime`: a template's middle processes, which fork the helpers). A helper
    /// that ends takes its CPU time from the first sum to the second, so a job's share is never lost with its helper.
    static func treeCPUMilliseconds() -> Double {
        consistent { children in
            let live = ([getpid()] + children).reduce(0.0) { total, pid in
                var clock = clockid_t()
                var now = timespec()
                guard clock_getcpuclockid(pid, &clock) == 0, clock_gettime(clock, &now) == 0 else { return total }
                return total + Double(now.tv_sec) * 1000 + Double(now.tv_nsec) / 1_000_000
            }
            let ticks = children.reduce(0) { total, pid in
                total + (statFields(pid).map { (Int($0[13]) ?? 0) + (Int($0[14]) ?? 0) } ?? 0)
            }
            return live + Double(ticks) * 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
        } reaped: { usage in
            Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000
                + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000
        }
    }

    static func statusKiB(_ pid: pid_t, _ name: String) -> Int {
        max(0, ProcessMemory.field(name, in: "/proc/\(pid)/status"))
    }

    /// Page faults (minor and major) of the whole tree so far, counted as `treeCPUMilliseconds` counts CPU time:
    /// `/proc/PID/stat` fields 10 and 12 of this process and its live children, 11 and 13 of the live children (what
    /// their reaped children took), and `getrusage(RUSAGE_CHILDREN)` for the children this process reaped.
    static func treeFaults() -> Int {
        consistent { children in
            ([getpid()] + children).reduce(0) { total, pid in
                guard let fields = statFields(pid) else { return total }
                let own = (Int(fields[7]) ?? 0) + (Int(fields[9]) ?? 0)
                let reaped = pid == getpid() ? 0 : (Int(fields[8]) ?? 0) + (Int(fields[10]) ?? 0)
                return total + own + reaped
            }
        } reaped: { usage in
            usage.ru_minflt + usage.ru_majflt
        }
    }

    /// `/proc/PID/stat`'s fields from field 3 (the state), after the command's closing parenthesis; nil when the
    /// process is gone.
    static func statFields(_ pid: pid_t) -> [Substring]? {
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        guard let end = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        return fields.count > 14 ? fields : nil
    }

    /// `live(children)` plus `reaped(getrusage(RUSAGE_CHILDREN))`, read again while a child was reaped in between
    /// (it would count in both or in neither; every helper that ends has used some CPU and faulted, so a reap
    /// changes `reaped`).
    static func consistent<T: AdditiveArithmetic>(_ live: ([pid_t]) -> T, reaped: (rusage) -> T) -> T {
        func reapedSoFar() -> T {
            var usage = rusage()
            getrusage(RUSAGE_CHILDREN.rawValue, &usage)
            return reaped(usage)
        }
        while true {
            let before = reapedSoFar()
            let total = live(pids())
            if reapedSoFar() == before { return total + before }
        }
    }

    /// Proportional set size: shared pages divided among the processes that map them.
    static func pssKiB(_ pid: pid_t) -> Int {
        max(0, ProcessMemory.field("Pss", in: "/proc/\(pid)/smaps_rollup"))
    }
}
