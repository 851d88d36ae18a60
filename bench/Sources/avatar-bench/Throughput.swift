import CropGeometry
import Dispatch
import FoundationEssentials
import Imaging
import Synchronization

/// `avatar-bench throughput --jobs JOBS.json --root DIR --threads N`: renders every job of
/// the end-to-end benchmark's job list (bench/e2e.py's format) on N threads, from sources
/// already in memory, and prints the render-only throughput. bench/bench-e2e.sh sets it
/// beside the end-to-end throughput of the same jobs at the same pool width.
struct ThroughputJob: Decodable {
    struct Pose: Decodable { var scale: Double; var tx: Double?; var ty: Double? }
    struct Rect: Decodable { var x: Double; var y: Double; var side: Double }
    var source_key: String
    var pose: Pose?
    var rect: Rect?

    var input: CropInput {
        if let pose { return .pose(EditorPose(scale: pose.scale, tx: pose.tx ?? 0, ty: pose.ty ?? 0), reference: nil) }
        if let rect { return .rect(PixelRect(x: rect.x, y: rect.y, side: rect.side), reference: nil) }
        return .centred
    }
}

struct ThroughputRecord: Encodable {
    var type = "throughput"
    var jobs: Int
    var threads: Int
    var failures: Int
    var seconds: Double
    var throughput_jobs_per_s: Double
}

func throughput(jobsPath: String, root: String, threads: Int, renderer: AvatarRenderer) throws {
    let jobs = try JSONDecoder().decode([ThroughputJob].self, from: Data(contentsOf: URL(fileURLWithPath: jobsPath)))
    var sources: [String: [UInt8]] = [:]
    for key in Set(jobs.map(\.source_key)) {
        sources[key] = try readBytes("\(root)/\(key)")
    }
    let loaded = sources
    let next = Mutex(0)
    let failures = Mutex(0)
    let clock = ContinuousClock()
    let start = clock.now
    DispatchQueue.concurrentPerform(iterations: threads) { _ in
        while true {
            let index = next.withLock { value -> Int in
                defer { value += 1 }
                return value
            }
            guard index < jobs.count else { return }
            let job = jobs[index]
            do {
                let probed = try renderer.probe(loaded[job.source_key]!)
                _ = try renderer.render(probed, input: job.input, options: RenderOptions())
            } catch {
                failures.withLock { $0 += 1 }
            }
        }
    }
    let elapsed = clock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    emit(
        ThroughputRecord(
            jobs: jobs.count, threads: threads, failures: failures.withLock { $0 }, seconds: seconds,
            throughput_jobs_per_s: Double(jobs.count) / seconds))
}
