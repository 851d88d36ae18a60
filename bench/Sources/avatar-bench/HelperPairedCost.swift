import Dispatch
import FoundationEssentials
import Glibc
import Imaging
import Logging
import RenderHelpers

/// `avatar-bench helpers --mode paired --image PATH [--image PATH …] --helper-binary PATH [--slots N] [--rounds N]
/// [--load-pairs N] [--faces]`:
/// what a job costs in a render helper against in this process, one job of each in turn in one process, the
/// order swapped every pair (bench/README.md, "Render helpers"). Two runs of whole modes
/// drift apart by more than the few milliseconds a helper adds (the machine speeds up and slows down over seconds);
/// pairing job with job takes the drift out, so the median of the pairs' differences resolves a millisecond.
/// Per job: its wall time and the CPU time of the whole process tree (this process, the template and every helper,
/// all threads, ended ones included) across it, and the page faults of that tree (memory a job touches for the first
/// time, or again after a helper gave it back). A helper job's CPU time and faults include its replacement's fork
/// and rehearsal, which run after its wall time ends (the pool is whole again before the next job). Lone jobs, one
/// in flight, as `--mode helpers` times them; then full load the same way, batch against batch (`--load-pairs`,
/// default 6; 0 skips it), each batch about 2 s of jobs.
struct HelperPairedRecord: Encodable {
    var type = "helper-paired"
    var image: String
    var pairs: Int
    var in_process_cpu_ms: Double
    var helper_cpu_ms: Double
    var in_process_wall_ms: Double
    var helper_wall_ms: Double
    /// Medians of each pair's helper job minus its in-process job.
    var added_cpu_ms: Double
    var added_wall_ms: Double
    /// The middle half of the pairs' differences (25th and 75th percentiles).
    var added_cpu_ms_quartiles: [Double]
    var added_wall_ms_quartiles: [Double]
    /// Medians of the page faults per job (the whole tree's).
    var in_process_faults: Double
    var helper_faults: Double
    /// Full load in turn: `load_pairs` batches of `load_jobs` jobs on every slot, in-process and in helpers, the
    /// order swapped every pair. Each pair's jobs/s in helpers over in-process; the median and the middle half.
    var load_pairs: Int
    var load_jobs: Int
    var throughput_ratio: Double
    var throughput_ratio_quartiles: [Double]
}

func pairedHelperCost(
    images: [String], helperBinary: String, slots: Int, pairs: Int, loadPairs: Int, faceModel: String?,
    logger: Logger
) throws {
    let renderer = AvatarRenderer(logger: logger)
    try startInProcess(renderer, faceModel: faceModel)
    let launch = RenderHelperPool.Launch(
        executable: helperBinary, vipsConcurrency: 1, faceModel: faceModel, cores: DecodeCores.installed)
    let pool = try startWorkerPool(launch: launch, slots: slots, logger: logger)
    defer { pool.shutdown() }
    let clock = ContinuousClock()

    /// One job through `renders`: its wall time and the tree's CPU time across it, in ms, and the tree's faults. A
    /// helper job's CPU time and faults run on until the pool is whole again (its replacement forked, rehearsed and
    /// ready): that is its cost, and it would otherwise fall on the in-process job that follows.
    func job(_ source: [UInt8], on renders: Renders) throws -> (wall: Double, cpu: Double, faults: Double) {
        let faultsBefore = ChildProcesses.treeFaults()
        let cpuBefore = ChildProcesses.treeCPUMilliseconds()
        let began = clock.now
        try runJob(source, on: renders, renderer: renderer)
        let wall = (clock.now - began).ms
        if case .helpers = renders {
            let deadline = clock.now + .seconds(5)
            while pool.idleHelpers < pool.size {
                guard clock.now < deadline else { throw BenchError("no replacement helper ready within 5 s") }
                usleep(1_000)
            }
        }
        let cpu = ChildProcesses.treeCPUMilliseconds() - cpuBefore
        return (wall, cpu, Double(ChildProcesses.treeFaults() - faultsBefore))
    }

    for path in images {
        let source = try readBytes(path)
        for _ in 0..<3 {
            _ = try job(source, on: .inProcess)
            _ = try job(source, on: .helpers(pool))
        }
        var local: [(wall: Double, cpu: Double, faults: Double)] = []
        var helped: [(wall: Double, cpu: Double, faults: Double)] = []
        for pair in 0..<pairs {
            let (inProcess, inHelper) = try inTurn(
                pair: pair, { try job(source, on: .inProcess) }, { try job(source, on: .helpers(pool)) })
            local.append(inProcess)
            helped.append(inHelper)
        }
        // Full load, batch against batch: at least 4 jobs per slot, and about 2 s of them, so that a batch's start
        // and end (slots idle while the last jobs finish) weigh little and a batch outlasts the machine's jitter.
        let loadJobs = max(4 * slots, Int(2_000 / max(median(local.map(\.wall)), 1) * Double(slots)))
        func jobsPerSecond(_ renders: Renders) throws -> Double {
            let (_, seconds, failures) = timeAtFullLoad(jobs: loadJobs, slots: slots) {
                try runJob(source, on: renders, renderer: renderer)
            }
            if failures > 0 { throw BenchError("\(failures) jobs failed on \(path)") }
            return Double(loadJobs) / seconds
        }
        var ratios: [Double] = []
        for pair in 0..<loadPairs {
            let (inProcessRate, helperRate) = try inTurn(
                pair: pair, { try jobsPerSecond(.inProcess) }, { try jobsPerSecond(.helpers(pool)) })
            ratios.append(helperRate / inProcessRate)
        }
        ratios.sort()

        let addedCPU = zip(helped, local).map { $0.cpu - $1.cpu }.sorted()
        let addedWall = zip(helped, local).map { $0.wall - $1.wall }.sorted()
        func quartiles(_ sorted: [Double]) -> [Double] {
            [sorted[sorted.count / 4], sorted[(sorted.count * 3) / 4]]
        }
        emit(
            HelperPairedRecord(
                image: path, pairs: pairs,
                in_process_cpu_ms: median(local.map(\.cpu)),
                helper_cpu_ms: median(helped.map(\.cpu)), in_process_wall_ms: median(local.map(\.wall)),
                helper_wall_ms: median(helped.map(\.wall)), added_cpu_ms: median(addedCPU),
                added_wall_ms: median(addedWall), added_cpu_ms_quartiles: quartiles(addedCPU),
                added_wall_ms_quartiles: quartiles(addedWall), in_process_faults: median(local.map(\.faults)),
                helper_faults: median(helped.map(\.faults)), load_pairs: loadPairs, load_jobs: loadJobs,
                throughput_ratio: ratios.isEmpty ? 0 : median(ratios),
                throughput_ratio_quartiles: ratios.isEmpty ? [] : quartiles(ratios)))
    }
}
