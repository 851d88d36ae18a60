import CropGeometry
import Foundation
import Imaging
import Logging
import TestEnvironment
import Testing

@testable import RenderHelpers

/// The render helpers against the built `avatar-cropper` (docs/ARCHITECTURE.md §3, "Render helpers"): the same
/// avatar as in-process, and each way a helper can fail — crash, hang, memory — ends only that job, with its
/// code, and the pool renders the next job on a fresh helper.
@Suite("Render helpers", .serialized)
struct RenderHelperPoolTests {
    static let photo = "size/craft-beer_640x640.jpg"
    static let heic = "formats/heic_iphone-7-plus_1008x756.heic"
    static let logger = Logger(label: "test.render-helpers")

    /// A pool of one helper and a spare from the built binary; `warm`: once its template is ready, with both helpers
    /// forked from it warmed up (the steady state; its first helpers are spawned while the template warms up).
    private func withPool(warm: Bool = false, _ body: (RenderHelperPool) throws -> Void) throws {
        let pool = try RenderHelperPool(
            launch: .init(executable: try TestFiles.requireCropperBinary(), vipsConcurrency: 1), size: 2,
            logger: Self.logger)
        defer { pool.shutdown() }
        if warm {
            #expect(pool.waitForTemplate(timeout: .seconds(120)), "the template warmed up and its workers left")
            #expect(pool.templateForksWarm)
            // The spawned helpers are taken all at once (a job prefers a rehearsed helper, so one at a time would
            // leave a spawned one idle), then replaced by forked ones.
            Self.wait(seconds: 60) { pool.idleHelpers == pool.size }
            for _ in 0..<2 where pool.idleForkedWarm < pool.size {
                let sessions = try (0..<pool.size).map { _ in try pool.session(limits: ImageLimits(), seams: nil) }
                for session in sessions { session.end() }
                Self.wait(seconds: 60) { pool.idleHelpers == pool.size }
            }
            #expect(pool.idleForkedWarm == pool.size, "every idle helper forked warm")
        }
        try body(pool)
    }

    private func source(marker: String = "") throws -> [UInt8] {
        Array(try Data(contentsOf: TestFiles.fixtures.appendingPathComponent(Self.photo))) + Array(marker.utf8)
    }

    /// Probe and render `bytes` in one session.
    private func render(
        _ bytes: [UInt8], on renders: Renders, reservedBytes: Int? = nil, cancellation: RenderCancellation? = nil
    ) throws -> RenderResult {
        let options = RenderOptions(extraSizes: [80], blurHash: true)
        let session = try renders.session(renderer: AvatarRenderer(logger: Self.logger), seams: .sourceMarkers)
        defer { session.end() }
        let probed = try session.probe(bytes, input: .centred, options: options, cancellation: cancellation)
        #expect(probed.header.storedSize == PixelSize(width: 640, height: 640))
        return try session.render(
            fallback: false, reservedBytes: reservedBytes ?? probed.estimate.fullResolution, cancellation: cancellation)
    }

    @Test("a helper renders the same avatar, extras, BlurHash and plan as the process itself")
    func sameAsInProcess() throws {
        try Vips.initialise()
        let bytes = try source()
        let local = try render(bytes, on: .inProcess)
        try withPool(warm: true) { pool in
            #expect(pool.idleForkedWarm == pool.size, "rendered by a helper forked warm: every idle one is")
            let helped = try render(bytes, on: .helpers(pool))
            #expect(helped.avatar == local.avatar)
            #expect(helped.extras == local.extras)
            #expect(helped.blurHash == local.blurHash && helped.blurHash != nil)
            #expect(helped.plan == local.plan && helped.header == local.header && helped.decoder == local.decoder)
            #expect(helped.timings.total > .zero)
        }
    }

    @Test(
        "each job renders on a helper of its own, as in-process: no helper serves two jobs (two users), whatever the outcome"
    )
    func oneJobPerHelper() throws {
        try Vips.initialise()
        let options = RenderOptions(extraSizes: [80], blurHash: true)
        // The JPEG (155 KB) and the smaller HEIC (55 KB), and a photo too small to render (a `failed` reply).
        let photos = [try source(), Array(try Data(contentsOf: TestFiles.fixtures.appendingPathComponent(Self.heic)))]
        let tooSmall = ImageLimits(minSide: 2_000)
        func job(_ bytes: [UInt8], _ session: any RenderSession) throws -> RenderResult {
            let probed = try session.probe(bytes, input: .centred, options: options, cancellation: nil)
            return try session.render(fallback: false, reservedBytes: probed.estimate.fullResolution, cancellation: nil)
        }
        let expected = try photos.map { bytes in
            let session = try Renders.inProcess.session(renderer: AvatarRenderer(logger: Self.logger), seams: nil)
            defer { session.end() }
            return try job(bytes, session)
        }
        var idleAtShutdown: [pid_t] = []
        try withPool { pool in
            var helpers: Set<pid_t> = []
            for round in 0..<3 {
                for (bytes, local) in zip(photos, expected) {
                    let session = try #require(
                        try pool.session(limits: ImageLimits(), seams: nil) as? HelperRenderSession)
                    let pid = try #require(session.helperPID)
                    #expect(helpers.insert(pid).inserted, "round \(round): helper \(pid) served a job before")
                    let result = try job(bytes, session)
                    #expect(result.avatar == local.avatar && result.extras == local.extras)
                    session.end()
                    Self.wait(seconds: 5) { Self.reaped(pid) }
                    #expect(Self.reaped(pid), "the helper is gone (killed and reaped) once its job ended")
                }
                let session = try #require(try pool.session(limits: tooSmall, seams: nil) as? HelperRenderSession)
                let pid = try #require(session.helperPID)
                #expect(helpers.insert(pid).inserted)
                #expect(throws: ImagingError.self) { _ = try job(photos[0], session) }
                session.end()
                Self.wait(seconds: 5) { Self.reaped(pid) }
                #expect(Self.reaped(pid), "a helper that replied failed goes too")
            }
            Self.wait(seconds: 30) { pool.idleHelpers == pool.size }
            #expect(pool.liveHelpers == pool.size)
            idleAtShutdown = pool.idlePIDs
        }
        // Killed by the shutdown, and reaped before it returned.
        #expect(idleAtShutdown.count == 2 && idleAtShutdown.allSatisfy(Self.reaped))
    }

    @Test(
        "a forged reply (the hostile helper) fails its job as refused and kills that helper; the worker goes on",
        arguments: ForgedReply.allCases)
    func forgedReply(_ forgery: ForgedReply) throws {
        let refusals = Deaths()
        let pool = try RenderHelperPool(
            launch: .init(executable: try TestFiles.requireCropperBinary(), vipsConcurrency: 1), size: 2,
            addressSpaceCeiling: 1 << 31, logger: Self.logger, onRefusedReply: { refusals.add(nil) })
        defer { pool.shutdown() }
        #expect(throws: RefusedReply.self) {
            _ = try render(try source(marker: "AVATAR-TEST-FORGE=\(forgery.rawValue)"), on: .helpers(pool))
        }
        #expect(refusals.signals.count == 1)
        _ = try render(try source(), on: .helpers(pool))
    }

    @Test("a helper runs with an empty environment and no descriptor but its channel")
    func leastPrivilege() throws {
        try withPool { pool in
            let session = try #require(try pool.session(limits: ImageLimits(), seams: nil) as? HelperRenderSession)
            defer { session.end() }
            let pid = try #require(session.helperPID)
            let environment = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))
            #expect(
                String(decoding: environment, as: UTF8.self) == HelperProcess.environment.map { $0 + "\0" }.joined())
            // Inherited: 0–2 on /dev/null and the channel. The rest are the helper's own (the runtime's
            // eventfd/epoll): no file, no other socket.
            let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
                .compactMap(Int.init).sorted()
            for descriptor in descriptors {
                let target = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)")
                switch descriptor {
                case 0...2: #expect(target == "/dev/null")
                case 3: #expect(target.hasPrefix("socket:"))
                default: #expect(target.hasPrefix("anon_inode:"), "descriptor \(descriptor): \(target)")
                }
            }
        }
    }

    @Test(
        "helpers are forked from one template: each the worker's own child, run as render-helper; a killed template is replaced"
    )
    func forkedFromTemplate() throws {
        try withPool(warm: true) { pool in
            let template = try #require(pool.templatePID)
            for _ in 0..<2 {
                let session = try #require(try pool.session(limits: ImageLimits(), seams: nil) as? HelperRenderSession)
                defer { session.end() }
                let pid = try #require(session.helperPID)
                #expect(session.helperForkedWarm)
                #expect(Self.parent(of: pid) == getpid(), "reparented to the worker, which reaps it")
                // Its whole map, read to the end: a one-buffer read of /proc/PID/maps (which says it is empty) stops
                // at 4 KiB.
                let maps = String(
                    decoding: try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(pid)/maps")).readToEnd()
                        ?? Data(),
                    as: UTF8.self
                ).split(separator: "\n")
                #expect(maps.count > 100, "the whole map, every library's mappings")
                // Nothing it can write is shared with its template or another helper: liborc's code, which libvips
                // compiles at run time, is in private memory (HelperProcess.refuseFileGrowth).
                let sharedWritable = maps.filter { line in
                    let permissions = Array(line.split(separator: " ")[1])
                    return permissions[1] == "w" && permissions[3] == "s"
                }
                #expect(sharedWritable.isEmpty, "\(sharedWritable)")
                // Of libvips' modules only the HEIF one is loaded (HelperProcess.environment): the others' libraries
                // are not in the helper at all.
                let modules = Set(maps.compactMap { $0.split(separator: "/").last }.filter { $0.hasPrefix("vips-") })
                #expect(modules == ["vips-heif.so"])
                let arguments = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))
                    .split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
                #expect(Array(arguments.dropFirst()) == RenderHelperPool.Launch(vipsConcurrency: 1).arguments)
                // A new helper for the next round: this one crashes.
                #expect(throws: RenderHelperCrash.self) {
                    _ = try render(try source(marker: "AVATAR-TEST-SIGNAL=SEGV"), on: .helpers(pool))
                }
            }
            // The last crash's replacement may still be forking from the old template: count once it is idle.
            Self.wait(seconds: 30) { pool.idleHelpers == pool.size }
            let forked = pool.forkedHelpers
            #expect(forked >= 4, "two helpers replacing the spawned ones and two crashed ones' replacements")
            kill(template, SIGKILL)
            #expect(throws: RenderHelperCrash.self) {
                _ = try render(try source(marker: "AVATAR-TEST-SIGNAL=SEGV"), on: .helpers(pool))
            }
            // The replacement's fork finds the template dead and starts another (its helpers are spawned until it is
            // ready); the helpers after that are forked from it.
            Self.wait(seconds: 30) { pool.templatePID.map { $0 != template } ?? false }
            #expect(pool.waitForTemplate(timeout: .seconds(120)))
            Self.wait(seconds: 30) { pool.idleHelpers == pool.size }
            for _ in 0..<pool.size {
                _ = try render(try source(), on: .helpers(pool))
                Self.wait(seconds: 30) { pool.idleHelpers == pool.size }
            }
            let next = try #require(pool.templatePID)
            #expect(next != template)
            #expect(pool.forkedHelpers > forked, "the new template forked the replacement")
            for _ in 0..<3 { _ = try render(try source(), on: .helpers(pool)) }
            #expect(pool.templatePID == next)
        }
    }

    /// Polls `condition` until it holds or `seconds` have passed (a liveness bound, not a timing assertion: the test
    /// asserts what it waited for afterwards).
    private static func wait(seconds: Double, until condition: () -> Bool) {
        let clock = ContinuousClock()
        let start = clock.now
        while clock.now - start < .seconds(seconds), !condition() {
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    @Test("a helper forked at a quiet moment rehearses a job before it is ready; one forked while a job runs does not")
    func rehearsedWhenQuiet() throws {
        try withPool(warm: true) { pool in
            let renderer = AvatarRenderer(logger: Self.logger)
            // Each idle helper was forked once the last job had ended: its rehearsal's libvips workers are still
            // there (libvips ends an idle worker after 15 s).
            let held = try #require(try pool.session(limits: ImageLimits(), seams: nil) as? HelperRenderSession)
            defer { held.end() }
            let rehearsed = try #require(held.helperPID)
            // While `held` has a job, another job ends: its replacement is forked without a rehearsal.
            try Renders.helpers(pool).session(renderer: renderer, seams: nil).end()
            Self.wait(seconds: 30) { pool.idleHelpers == pool.size - 1 && pool.idleForkedWarm == pool.size - 1 }
            let next = try #require(try pool.session(limits: ImageLimits(), seams: nil) as? HelperRenderSession)
            defer { next.end() }
            let plain = try #require(next.helperPID)
            #expect(Self.threads(of: rehearsed) > Self.threads(of: plain), "libvips' workers from its rehearsal")
        }
    }

    private static func threads(of pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
        return line.flatMap { Int($0.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
    }

    private static func parent(of pid: pid_t) -> pid_t? {
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        guard let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 1 else { return nil }
        return pid_t(fields[1])
    }

    @Test(
        "a helper that dies by a signal fails its job as a crash; the next job renders on a fresh helper",
        arguments: [
            ("AVATAR-TEST-SIGNAL=SEGV", SIGSEGV), ("AVATAR-TEST-SIGNAL=KILL", SIGKILL), ("AVATAR-TEST-ABORT", SIGABRT),
        ])
    func crash(marker: String, signal: Int32) throws {
        let deaths = Deaths()
        let pool = try RenderHelperPool(
            launch: .init(executable: try TestFiles.requireCropperBinary(), vipsConcurrency: 1), size: 2,
            logger: Self.logger, onDeath: { deaths.add($0) })
        defer { pool.shutdown() }
        #expect(throws: RenderHelperCrash.self) { _ = try render(try source(marker: marker), on: .helpers(pool)) }
        do {
            _ = try render(try source(marker: marker), on: .helpers(pool))
        } catch let crash as RenderHelperCrash {
            #expect(crash.signal == signal)
        }
        #expect(deaths.signals == [signal, signal])
        _ = try render(try source(), on: .helpers(pool))
    }

    @Test("a render past its deadline is killed at once and its job ends as cancelled; the pool goes on")
    func deadline() throws {
        try withPool { pool in
            let cancellation = RenderCancellation()
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { cancellation.cancel() }
            let clock = ContinuousClock()
            let start = clock.now
            do {
                _ = try render(
                    try source(marker: "AVATAR-TEST-SLEEP-MS=60000"), on: .helpers(pool), cancellation: cancellation)
                Issue.record("the hung render returned")
            } catch let error as ImagingError {
                #expect(error.code == .cancelled)
            }
            #expect(clock.now - start < .seconds(5), "the helper was killed, not waited for")
            _ = try render(try source(), on: .helpers(pool))
        }
    }

    /// The allocation refused with malloc's NULL (the render reports it; the helper lives on) and through GLib (whose
    /// answer is to end the process: the helper exits as out of memory, which is not counted as a crash).
    @Test(
        "an allocation past the job's memory admission fails that job as out of memory, not a crash; within it, it succeeds",
        arguments: ["AVATAR-TEST-ALLOCATE-MB=", "AVATAR-TEST-GLIB-ALLOCATE-MB="])
    func memoryLimit(marker: String) throws {
        let deaths = Deaths()
        let pool = try RenderHelperPool(
            launch: .init(executable: try TestFiles.requireCropperBinary(), vipsConcurrency: 1), size: 2,
            logger: Self.logger, onDeath: { deaths.add($0) })
        defer { pool.shutdown() }
        let admission = 64 << 20
        do {
            _ = try render(try source(marker: marker + "2048"), on: .helpers(pool), reservedBytes: admission)
            Issue.record("2 GiB fit in a 64 MiB admission")
        } catch let error as ImagingError {
            #expect(error.code == .outOfMemory)
        }
        #expect(deaths.signals.isEmpty, "not a crash")
        _ = try render(try source(marker: marker + "32"), on: .helpers(pool), reservedBytes: admission)
    }

    @Test("a helper whose worker is gone ends, even stuck in a call that never returns")
    func workerGone() throws {
        let helper = try HelperProcess.spawn(
            executable: try TestFiles.requireCropperBinary(), arguments: RenderHelperPool.Launch().arguments, cores: nil
        )
        defer { helper.kill() }
        guard case .ready = try HelperRenderSession.receive(from: helper, cancellation: nil, timeout: .seconds(30))
        else { throw RenderHelperCrash(signal: nil, exitStatus: -1) }
        // A render that sleeps a minute inside the helper, as a hung decoder would.
        let bytes = try source(marker: "AVATAR-TEST-SLEEP-MS=60000")
        let sourceFile = try MemoryFile.sealedSource(bytes)
        let resultFile = try MemoryFile.sealedResult(capacity: ReplyCheck.resultCapacity(for: RenderOptions()))
        defer {
            sourceFile.close()
            resultFile.close()
        }
        let job = ProbeJob(
            nonce: 1, sourceLength: bytes.count, input: .centred, options: RenderOptions(), limits: ImageLimits(),
            seams: .sourceMarkers)
        try helper.channel.send(
            try HelperCoding.encode(HelperRequest.probe(job)),
            descriptors: [sourceFile.descriptor, resultFile.descriptor])
        guard case .probed = try HelperRenderSession.receive(from: helper, cancellation: nil, timeout: .seconds(30))
        else { throw RenderHelperCrash(signal: nil, exitStatus: -1) }
        try helper.channel.send(try HelperCoding.encode(HelperRequest.render(nonce: 1, fallback: false)))
        Thread.sleep(forTimeInterval: 0.3)
        // What a worker's death does to the channel: its end goes (shut down here; `reap` closes it).
        _ = shutdown(helper.channel.descriptor, Int32(SHUT_RDWR))
        Self.wait(seconds: 10) { kill(helper.pid, 0) != 0 || Self.isZombie(helper.pid) }
        #expect(Self.isZombie(helper.pid), "the helper still runs 10 s after its worker went")
        let death = helper.reap()
        #expect(death.signal == nil && death.exitStatus == RenderHelperServer.workerGone)
    }

    /// `/proc/PID/stat`'s state and parent, nil once `pid` is gone.
    private static func stat(_ pid: pid_t) -> (state: Substring, parent: pid_t?)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let fields = text.split(separator: ")").last?.split(separator: " "), fields.count > 1
        else { return nil }
        return (fields[0], pid_t(fields[1]))
    }

    /// Whether `pid` is no child of this process any more: reaped (or its number since taken by another process).
    private static func reaped(_ pid: pid_t) -> Bool {
        guard let stat = stat(pid) else { return true }
        return stat.parent != getpid()
    }

    private static func isZombie(_ pid: pid_t) -> Bool {
        stat(pid)?.state == "Z"
    }

    @Test("a helper killed while idle is replaced; the pool still serves")
    func idleDeath() throws {
        try withPool { pool in
            Self.wait(seconds: 30) { pool.idleHelpers == pool.size }
            let idle = pool.idlePIDs
            #expect(idle.count == pool.size)
            for pid in idle { kill(pid, SIGKILL) }
            // Wholly dead before the next job looks at the idle helpers: its main thread a zombie (until the
            // pool reaps it) and no other thread left. The main thread turns zombie before libvips' threads
            // have ended, and those still hold the channel open (CI once handed such a helper a job).
            for pid in idle {
                Self.wait(seconds: 5) {
                    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
                    return status.isEmpty || (status.contains("State:\tZ") && status.contains("Threads:\t1\n"))
                }
            }
            for _ in 0..<3 { _ = try render(try source(), on: .helpers(pool)) }
        }
    }
}

/// The signals `onDeath` was told, in order.
final class Deaths: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [Int32?] = []

    func add(_ signal: Int32?) {
        lock.lock()
        list.append(signal)
        lock.unlock()
    }

    var signals: [Int32?] {
        lock.lock()
        defer { lock.unlock() }
        return list
    }
}
