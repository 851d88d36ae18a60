import CropGeometry
import Foundation
import Imaging
import Logging
import Sandbox

/// The worker's render helpers (docs/ARCHITECTURE.md §3, "Render helpers"; docs/SECURITY.md): processes started from
/// the worker's own binary that probe and render its jobs, so that a decoder crashing, hanging, exhausting memory or
/// taken over by a hostile photo ends or holds one helper, never the worker or another user's job. `size` helpers are
/// kept (render slots plus a warm spare); each serves one job and is then replaced (`HelperPoolState` decides, this
/// class carries it out: processes, threads, the template).
///
/// Each job takes a helper (`session`), hands it the photo in a sealed memory file and a result file of a fixed size,
/// and checks every reply (`ReplyCheck`) before it uses it. The helper's address space is capped (`AddressSpaceCap`)
/// for each step; a job whose deadline passes kills its helper; an idle helper that uses CPU is killed by its
/// `RLIMIT_CPU`.
public final class RenderHelperPool: @unchecked Sendable {
    // @unchecked Sendable: `state`, `helpers`, `template`, `templatesOff` and `forked` are only touched with
    // `condition` locked.

    /// How to start a helper: the worker's own executable and the hidden subcommand's options.
    public struct Launch: Sendable {
        public var executable: String
        /// The options a helper (and the template it is forked from) runs with.
        public var options: [String]
        /// The decode cores every helper shares (inherited as `HelperProcess.coresDescriptor`); nil: none.
        public var cores: DecodeCores?

        /// `executable render-helper OPTIONS` (`RenderHelperOptions`: without a concurrency, libvips' default;
        /// without a model, no faces are found; without cores, each render decodes on its own thread alone).
        public init(
            executable: String = Launch.ownExecutable, vipsConcurrency: Int? = nil, faceModel: String? = nil,
            cores: DecodeCores? = nil
        ) {
            self.executable = executable
            self.cores = cores
            self.options =
                RenderHelperOptions(vipsConcurrency: vipsConcurrency, faceModel: faceModel, decodeCores: cores?.count)
                .arguments
        }

        /// A spawned helper's arguments.
        var arguments: [String] { [Launch.subcommand] + options }

        /// The running binary (the kernel's link, so an upgrade of the file on disk does not change it).
        public static let ownExecutable = "/proc/self/exe"
        /// The hidden CLI subcommand a helper runs (`avatar-cropper render-helper`).
        public static let subcommand = HelperProcess.subcommand
    }

    /// Longest a new helper may take to start, warm up and say it is ready.
    static let startTimeout: Duration = .seconds(30)
    /// How often a job waiting for its helper looks at its cancellation.
    static let cancellationPoll: Int32 = 20
    /// CPU seconds an idle helper may use before the kernel ends it (`RLIMIT_CPU`): a helper waiting for a job has
    /// nothing to compute once it gave its memory back.
    static let idleCPUSeconds = 5

    public let launch: Launch
    /// Helpers kept: render slots plus the spare.
    public let size: Int
    /// The most a job may reserve plus twice the largest source (nil: no cap).
    private let addressSpaceCeiling: Int?
    private let logger: Logger
    private let onDeath: @Sendable (Int32?) -> Void
    private let onRefusedReply: @Sendable () -> Void
    private let condition = NSCondition()
    private var state: HelperPoolState
    private var helpers: [HelperPoolState.ID: HelperProcess] = [:]
    /// Reaps the helpers the pool killed, off their jobs' path.
    private let reaper = HelperReaper()
    /// What new helpers are forked from (started with the first helper).
    private var template: HelperTemplate?
    /// No template could start, or a fresh one failed: helpers are spawned.
    private var templatesOff = false
    /// Helpers forked from a template so far.
    private var forked = 0
    /// The lockdown layers the first helper reported (logged once).
    public private(set) var lockdown: ProcessLockdown.Layers = []

    /// The largest memory estimate a probe may report: what a job may reserve (the ceiling less the sources).
    var maxEstimate: Int? { addressSpaceCeiling }

    /// Starts `size` helpers and waits until the first is ready (a binary that cannot start one fails here, at
    /// start, not job by job). `addressSpaceCeiling` is the most a job may reserve plus twice the largest source
    /// (the worker's memory budget and `image.max-mb`). `onDeath` is told the signal of every helper that died during
    /// a job (nil: exited); `onRefusedReply`, of every reply `ReplyCheck` refused.
    public init(
        launch: Launch, size: Int, addressSpaceCeiling: Int? = nil, logger: Logger,
        onDeath: @escaping @Sendable (Int32?) -> Void = { _ in },
        onRefusedReply: @escaping @Sendable () -> Void = {}
    ) throws {
        self.launch = launch
        self.size = size
        self.addressSpaceCeiling = addressSpaceCeiling
        self.logger = logger
        self.onDeath = onDeath
        self.onRefusedReply = onRefusedReply
        let (opened, starts) = HelperPoolState.opening(size: size)
        state = opened
        // The first start is waited for; a helper that fails it is retried twice before the pool gives up (a start
        // under heavy load once delivered an unreadable `ready`; cause not found, see the commit that added this).
        guard case .start(let first, _) = starts[0] else { preconditionFailure("a pool opens with starts") }
        var attempt = 1
        var started: HelperProcess?
        while started == nil {
            do {
                started = try start()
            } catch  where attempt < 3 {
                logger.warning("a render helper failed to start, retrying", metadata: ["error": "\(error)"])
                attempt += 1
            }
        }
        lockdown = started!.lockdown
        logger.info(
            "render helpers locked down", metadata: ["layers": "\(lockdown.names.joined(separator: ","))"])
        finishStart(first, started!)
        perform(Array(starts.dropFirst()))
    }

    /// A session on an idle helper (one is started now if none is idle, which only happens while a replacement
    /// is still starting).
    func session(limits: ImageLimits, seams: RenderTestSeams?) throws -> any RenderSession {
        let (id, helper) = try checkOut()
        return HelperRenderSession(id: id, helper: helper, pool: self, limits: limits, seams: seams)
    }

    /// Ends every helper (idle ones at once, reaped before this returns; busy ones when their session ends).
    public func shutdown() {
        condition.lock()
        let actions = state.shutdown()
        let ended = template
        template = nil
        condition.unlock()
        perform(actions)
        ended?.end()
        reaper.drain()
    }

    /// Helpers started and not yet ended.
    public var liveHelpers: Int {
        condition.lock()
        defer { condition.unlock() }
        return state.live
    }

    /// Helpers idle now (tests and the bench look at it: with all `size` idle, no replacement is still starting or
    /// rehearsing).
    public var idleHelpers: Int {
        condition.lock()
        defer { condition.unlock() }
        return state.idle.count
    }

    /// Idle helpers forked from a warm template (tests look at it).
    var idleForkedWarm: Int {
        condition.lock()
        defer { condition.unlock() }
        return state.idle.filter { helpers[$0]?.forkedWarm == true }.count
    }

    /// The idle helpers' pids (tests kill them).
    var idlePIDs: [pid_t] {
        condition.lock()
        defer { condition.unlock() }
        return state.idle.compactMap { helpers[$0]?.pid }
    }

    /// The template's pid while there is one (tests look at it).
    var templatePID: pid_t? {
        condition.lock()
        defer { condition.unlock() }
        return template?.pid
    }

    /// Waits up to `timeout` for the template to be ready to fork helpers (started now if there is none): the steady
    /// state, which the bench measures and tests look at. True when it is; false when it is not yet, or templates are
    /// off.
    public func waitForTemplate(timeout: Duration) -> Bool {
        let milliseconds = Int32(clamping: timeout.components.seconds * 1_000)
        return (try? currentTemplate()?.waitUntilReady(milliseconds: milliseconds)) ?? false
    }

    /// Whether the current template forks helpers warmed up (tests look at it).
    var templateForksWarm: Bool {
        condition.lock()
        let current = template
        condition.unlock()
        return current?.forksWarm ?? false
    }

    /// Helpers forked from a template so far (tests look at it).
    var forkedHelpers: Int {
        condition.lock()
        defer { condition.unlock() }
        return forked
    }

    // MARK: - Helpers in and out

    private func checkOut() throws -> (HelperPoolState.ID, HelperProcess) {
        while true {
            condition.lock()
            let decision = state.checkOut()
            // A start waiting out a quiet moment learns that it ended.
            condition.broadcast()
            var ready: HelperProcess? = nil
            switch decision {
            case .use(let id):
                ready = helpers[id]
            case .await(let id):
                // Until its start ends (`finishStart`, or a failure): the helper is this job's, or it checks out again.
                while state.awaited(id) == .starting { condition.wait() }
                ready = state.awaited(id) == .ready ? helpers[id] : nil
            case .startNow, .closed:
                break
            }
            condition.unlock()
            switch decision {
            case .closed:
                throw RenderHelperUnavailable(description: "the render helpers are shut down")
            case .use(let id), .await(let id):
                // A ready helper has nothing to say: a readable channel means it is gone (killed from outside).
                if let helper = ready, (try? helper.channel.waitReadable(milliseconds: 0)) == false {
                    do {
                        try helper.allowCPU(seconds: nil)
                        return (id, helper)
                    } catch {}
                }
                // Dead before its job: replaced, and the next one tried. (An awaited start that failed, or ended in a
                // pool shut down meanwhile, is no helper of this job's: nothing to replace; it checks out again.)
                condition.lock()
                let actions = state.jobEnded(id)
                condition.unlock()
                perform(actions)
            case .startNow(let id):
                do {
                    let helper = try start()
                    condition.lock()
                    helpers[id] = helper
                    condition.unlock()
                    try helper.allowCPU(seconds: nil)
                    return (id, helper)
                } catch {
                    condition.lock()
                    let actions = state.jobEnded(id)
                    condition.unlock()
                    perform(actions)
                    throw RenderHelperUnavailable(description: "no render helper could start: \(error)")
                }
            }
        }
    }

    /// A session's job is over, whatever its outcome: its helper is killed (if still alive, counting a death during
    /// the job when `duringJob`) and replaced.
    fileprivate func jobEnded(_ id: HelperPoolState.ID, helper: HelperProcess, death: HelperProcess.Death?) {
        if let death, !helper.killedByPool, !death.outOfMemory { onDeath(death.signal) }
        condition.lock()
        let actions = state.jobEnded(id)
        condition.unlock()
        perform(actions)
    }

    fileprivate func refusedReply() {
        onRefusedReply()
    }

    /// Carries out the state's actions.
    private func perform(_ actions: [HelperPoolState.Action]) {
        for action in actions {
            switch action {
            case .kill(let id):
                // Under the pool's lock, so `reapOrphans` finds it among the helpers or among the reaper's.
                condition.lock()
                if let helper = helpers.removeValue(forKey: id) { reaper.kill(helper) }
                condition.unlock()
            case .start(let id, let quiet):
                Thread.detachNewThread { [self] in
                    let clock = ContinuousClock()
                    var rehearse = false
                    if quiet {
                        // Unless a job comes first (`checkOut` wakes this).
                        let end = Date(timeIntervalSinceNow: HelperPoolState.quietSeconds)
                        condition.lock()
                        while state.quiet, condition.wait(until: end) {}
                        rehearse = state.quiet
                        condition.unlock()
                    }
                    let began = clock.now
                    do {
                        let helper = try start(rehearsed: rehearse)
                        finishStart(id, helper)
                        logger.debug("render helper started", metadata: ["start_time": "\(clock.now - began)"])
                    } catch {
                        condition.lock()
                        state.startFailed(id)
                        condition.broadcast()  // a job waiting for it checks out again
                        condition.unlock()
                        logger.error("a render helper could not start", metadata: ["error": "\(error)"])
                    }
                }
            }
        }
    }

    /// A started helper joins the pool (or is killed, if the pool no longer needs it).
    private func finishStart(_ id: HelperPoolState.ID, _ helper: HelperProcess) {
        condition.lock()
        helpers[id] = helper
        let actions = state.started(id, rehearsed: helper.rehearsed)
        condition.broadcast()  // to the job waiting for it, if one is
        condition.unlock()
        perform(actions)
    }

    /// Starts a helper (rehearsed when `rehearsed` and it is forked warm), waits for its `ready`, and caps it: its
    /// address space for good, its CPU while it idles.
    private func start(rehearsed: Bool = false) throws -> HelperProcess {
        let helper = try forkOrSpawn(rehearsed: rehearsed)
        do {
            let reply = try HelperRenderSession.receive(from: helper, cancellation: nil, timeout: Self.startTimeout)
            guard case .ready(let layers) = reply, layers.contains(.seccomp) else {
                throw RenderHelperUnavailable(description: "a new render helper did not say it was locked down")
            }
            helper.lockdown = layers
            if let ceiling = addressSpaceCeiling, let size = helper.addressSpace {
                let hard = AddressSpaceCap.hard(readySize: size, ceiling: ceiling)
                try helper.limitAddressSpace(hard, hard: hard)
            }
            try helper.allowCPU(seconds: Self.idleCPUSeconds)
            return helper
        } catch {
            helper.kill()
            throw error
        }
    }

    /// A new helper process: forked from the template, or spawned when there is none. A template that fails is
    /// ended and replaced; a replacement that fails its first fork turns templates off for this pool (logged).
    private func forkOrSpawn(rehearsed: Bool) throws -> HelperProcess {
        for fresh in [false, true] {
            guard let current = currentTemplate() else { break }
            do {
                // Still warming up: this helper is spawned.
                guard let helper = try current.fork(rehearsed: rehearsed) else { break }
                helper.forkedWarm = current.forksWarm
                helper.rehearsed = rehearsed && current.forksWarm
                condition.lock()
                forked += 1
                condition.unlock()
                return helper
            } catch {
                logger.warning("the render helper template failed", metadata: ["error": "\(error)"])
                condition.lock()
                if template === current { template = nil }
                if fresh { templatesOff = true }
                condition.unlock()
                current.end()
                reapOrphans(of: current)
            }
        }
        return try HelperProcess.spawn(
            executable: launch.executable, arguments: launch.arguments, cores: launch.cores?.descriptor)
    }

    /// What `template`, dead in the middle of a fork, left this process: reaped now and once more a second later (the
    /// orphaned helper ends when it finds its channel closed).
    private func reapOrphans(of template: HelperTemplate) {
        let name = template.name
        let sweep: @Sendable () -> Void = { [self] in
            condition.lock()
            // Those killed and not yet reaped too: the reaper waits for each by its pid, which must not be freed.
            let known = helpers.values.map(\.pid) + (self.template.map { [$0.pid] } ?? []) + reaper.pending
            condition.unlock()
            HelperTemplate.reapOrphans(named: name, known: known)
        }
        sweep()
        DispatchQueue.global().asyncAfter(deadline: .now() + 1, execute: sweep)
    }

    /// The template, started now if there is none; nil once the pool is closed or templates are off.
    private func currentTemplate() -> HelperTemplate? {
        condition.lock()
        defer { condition.unlock() }
        if template == nil, !state.closed, !templatesOff {
            do {
                template = try HelperTemplate.start(
                    executable: launch.executable, options: launch.options, cores: launch.cores?.descriptor)
            } catch {
                logger.warning("no render helper template could start", metadata: ["error": "\(error)"])
                templatesOff = true
            }
        }
        return template
    }
}

/// A helper's address-space cap (`RLIMIT_AS`), computed here only: a hard limit set once when it is ready (its size
/// then, the most a job may reserve plus twice the largest source, and `headroom`), and for each step of a job a soft
/// limit: its size when the job began plus the source twice (as read, and libvips' copy), the job's admission once it
/// renders, and `headroom`. Saturating: no reply or setting makes the arithmetic trap.
enum AddressSpaceCap {
    /// Address space a helper may use beyond what the cap counts: libvips' and libheif's thread stacks and small
    /// allocations, which the admission does not count.
    static let headroom = 256 << 20

    static func hard(readySize: Int, ceiling: Int) -> Int {
        sum(readySize, ceiling, headroom)
    }

    /// The probe's cap; `baseline` is the helper's size when the job began.
    static func probe(baseline: Int, sourceBytes: Int) -> Int {
        sum(baseline, sourceBytes, sourceBytes, headroom)
    }

    /// The render's cap: the probe's and the job's memory admission.
    static func render(baseline: Int, sourceBytes: Int, reservedBytes: Int) -> Int {
        sum(baseline, sourceBytes, sourceBytes, max(0, reservedBytes), headroom)
    }

    private static func sum(_ parts: Int...) -> Int {
        parts.reduce(0) { total, part in
            let (value, overflow) = total.addingReportingOverflow(max(0, part))
            return overflow ? Int.max : value
        }
    }
}

/// One job on one helper.
final class HelperRenderSession: RenderSession {
    private let id: HelperPoolState.ID
    private var helper: HelperProcess?
    private let pool: RenderHelperPool
    private let limits: ImageLimits
    private let seams: RenderTestSeams?
    /// The job's result file, from the probe to the end of the session.
    private var result: MemoryFile?
    /// What this job's replies must be, once the probe was sent; and the header the probe reported.
    private var check: ReplyCheck?
    private var header: ImageHeader?
    /// The helper's address space when the job began, and the source's length.
    private var baseline = 0
    private var sourceBytes = 0
    private let clock = ContinuousClock()
    private var began: ContinuousClock.Instant?
    /// How the helper ended during this job, when it did (a crash, a kill at the deadline, a refused reply).
    private var death: HelperProcess.Death?

    init(
        id: HelperPoolState.ID, helper: HelperProcess, pool: RenderHelperPool, limits: ImageLimits,
        seams: RenderTestSeams?
    ) {
        self.id = id
        self.helper = helper
        self.pool = pool
        self.limits = limits
        self.seams = seams
    }

    func probe(
        _ source: [UInt8], input: CropInput, options: RenderOptions, cancellation: RenderCancellation?
    ) throws -> ProbeResult {
        let helper = try current()
        let sourceFile = try MemoryFile.sealedSource(source)
        defer { sourceFile.close() }  // the helper has its own descriptor once the probe is sent
        let check = ReplyCheck(
            nonce: UInt64.random(in: 1...UInt64.max), sourceLength: source.count, options: options, limits: limits,
            maxEstimate: pool.maxEstimate, resultCapacity: ReplyCheck.resultCapacity(for: options))
        let resultFile = try MemoryFile.sealedResult(capacity: check.resultCapacity)
        self.result = resultFile
        self.check = check
        sourceBytes = source.count
        baseline = helper.addressSpace ?? 0
        try helper.limitAddressSpace(AddressSpaceCap.probe(baseline: baseline, sourceBytes: sourceBytes))
        let job = ProbeJob(
            nonce: check.nonce, sourceLength: source.count, input: input, options: options, limits: limits, seams: seams
        )
        began = clock.now
        let reply = try exchange(
            .probe(job), descriptors: [sourceFile.descriptor, resultFile.descriptor], cancellation)
        let probed = try checked { () throws(RefusedReply) in try check.probed(reply) }
        header = probed.header
        return probed
    }

    func render(fallback: Bool, reservedBytes: Int, cancellation: RenderCancellation?) throws -> RenderResult {
        let helper = try current()
        guard let check, let result, let header, let began else {
            throw ImagingError(.invalidRequest, detail: "render before probe")
        }
        try helper.limitAddressSpace(
            AddressSpaceCap.render(baseline: baseline, sourceBytes: sourceBytes, reservedBytes: reservedBytes))
        let reply = try exchange(.render(nonce: check.nonce, fallback: fallback), descriptors: [], cancellation)
        let elapsed = clock.now - began
        return try checked { () throws(RefusedReply) in
            try check.rendered(reply, probed: header, result: result, elapsed: elapsed)
        }
    }

    /// The helper's pid while the session has one (tests look at its /proc entry).
    var helperPID: pid_t? { helper?.pid }
    /// Whether the session's helper was forked from a warm template (tests look at it).
    var helperForkedWarm: Bool { helper?.forkedWarm ?? false }

    /// Whatever happened, the helper goes (one job per helper) and the job's files are closed.
    func end() {
        result?.close()
        result = nil
        guard let helper else { return }
        self.helper = nil
        pool.jobEnded(id, helper: helper, death: death)
    }

    private func current() throws -> HelperProcess {
        guard let helper else { throw RenderHelperUnavailable(description: "the render session has ended") }
        return helper
    }

    /// `body`'s value; a reply it refuses kills the helper (counted) and fails the job.
    private func checked<Value>(_ body: () throws(RefusedReply) -> Value) throws -> Value {
        do {
            return try body()
        } catch {
            if let helper {
                helper.killedByPool = true
                helper.kill()
            }
            pool.refusedReply()
            throw error
        }
    }

    /// Sends `request` and waits for the reply; a `failed` reply (checked) is thrown as the `ImagingError` it carries.
    private func exchange(
        _ request: HelperRequest, descriptors: [Int32], _ cancellation: RenderCancellation?
    ) throws -> HelperReply {
        let helper = try current()
        do {
            try helper.channel.send(try HelperCoding.encode(request), descriptors: descriptors)
            let reply = try Self.receive(from: helper, cancellation: cancellation, timeout: nil)
            if let check, let failure = try checked({ () throws(RefusedReply) in try check.failure(reply) }) {
                throw failure
            }
            return reply
        } catch let error as ImagingError where error.code == .cancelled && helper.killedByPool {
            death = helper.reap()
            throw error
        } catch let crash as RenderHelperCrash {
            death = helper.reap()
            throw Self.failure(crash)
        } catch is DecodingError {
            throw try checked { () throws(RefusedReply) in throw RefusedReply(reason: "a message that does not decode")
            }
        } catch let error as HelperSystemError {
            // A send to a helper that just died fails before its end is read: what ended it is the answer.
            let ended = helper.kill()
            death = ended
            if ended.signal != nil || ended.outOfMemory { throw Self.failure(RenderHelperCrash(ended)) }
            throw error
        }
    }

    /// What a helper's end means for its job: an allocation refused at its limit is `out_of_memory`; anything
    /// else is the crash.
    private static func failure(_ crash: RenderHelperCrash) -> Error {
        guard HelperProcess.Death(signal: crash.signal, exitStatus: crash.exitStatus).outOfMemory else { return crash }
        return ImagingError(.outOfMemory, detail: "the render helper's allocation was refused at its memory limit")
    }

    /// The helper's next message. Looks at `cancellation` every `RenderHelperPool.cancellationPoll` ms: once it
    /// is cancelled, the helper is killed and this throws `.cancelled`. A helper that ends throws
    /// `RenderHelperCrash`; past `timeout`, the helper is killed and this throws `.cancelled`.
    static func receive(
        from helper: HelperProcess, cancellation: RenderCancellation?, timeout: Duration?
    ) throws -> HelperReply {
        let clock = ContinuousClock()
        let deadline = timeout.map { clock.now + $0 }
        while try !helper.channel.waitReadable(milliseconds: RenderHelperPool.cancellationPoll) {
            if cancellation?.isCancelled == true || deadline.map({ clock.now >= $0 }) == true {
                helper.killedByPool = true
                helper.kill()
                throw ImagingError(.cancelled, detail: "the render helper was killed at the job's deadline")
            }
        }
        guard let message = try helper.channel.receive() else {
            throw RenderHelperCrash(helper.reap())
        }
        for descriptor in message.descriptors { _ = close(descriptor) }
        return try HelperCoding.decode(HelperReply.self, from: message.bytes)
    }
}

extension RenderHelperCrash {
    init(_ death: HelperProcess.Death) {
        self.init(signal: death.signal, exitStatus: death.exitStatus)
    }
}
