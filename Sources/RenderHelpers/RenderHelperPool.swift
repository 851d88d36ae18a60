import CropGeometry
import Foundation
import Imaging
import Logging

/// The worker's render helpers (docs/ARCHITECTURE.md §3, "Render helpers"): processes started from the
/// worker's own binary that probe and render its jobs, so that a decoder crashing, hanging or exhausting memory
/// on a hostile photo ends one helper, never the worker. One helper per render slot plus a warm spare; a helper
/// that dies or is killed is replaced in the background, and the spare takes its place at once.
///
/// Each job takes a helper (`session`), hands it the photo in a memory file, and gives it back when done. The
/// helper's address space is capped (`RLIMIT_AS`) for each step: its size when the job began, the source, the
/// job's memory admission and `addressSpaceHeadroom`. A job whose deadline passes kills its helper.
public final class RenderHelperPool: @unchecked Sendable {
    // @unchecked Sendable: `idle`, `live` and `closed` are only touched with `condition` locked.

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

    /// Address space a helper may use beyond its size at the job's start, the source and the job's admission:
    /// libvips' and libheif's thread stacks and small allocations, which the admission does not count.
    public static let addressSpaceHeadroom = 256 << 20

    /// A helper's source memory file keeps its pages for the next job up to this size (a phone photo is 1–8 MB);
    /// a larger photo's pages go back after its job, so a busy helper holds at most this much of them.
    static let keptSourceBytes = 8 << 20
    /// Longest a new helper may take to start, warm up and say it is ready.
    static let startTimeout: Duration = .seconds(30)
    /// How often a job waiting for its helper looks at its cancellation.
    static let cancellationPoll: Int32 = 20

    public let launch: Launch
    /// Helpers kept: render slots plus the spare.
    public let size: Int
    /// The most any one job may reserve plus its source twice: with the headroom, each helper's hard address-space
    /// limit beyond its size when ready (nil: none).
    private let addressSpaceCeiling: Int?
    private let logger: Logger
    private let onDeath: @Sendable (Int32?) -> Void
    private let condition = NSCondition()
    private var idle: [HelperProcess] = []
    private var live = 0
    private var closed = false
    /// What new helpers are forked from (started with the first helper).
    private var template: HelperTemplate?
    /// No template could start, or a fresh one failed: helpers are spawned.
    private var templatesOff = false
    /// Helpers forked from a template so far.
    private var forked = 0

    /// Starts `size` helpers and waits until the first is ready (a binary that cannot start one fails here, at
    /// start, not job by job). `addressSpaceCeiling` is the most a job may reserve plus twice the largest source
    /// (the worker's memory budget and `image.max-mb`). `onDeath` is told the signal of every helper that died during
    /// a job (nil: exited).
    public init(
        launch: Launch, size: Int, addressSpaceCeiling: Int? = nil, logger: Logger,
        onDeath: @escaping @Sendable (Int32?) -> Void = { _ in }
    ) throws {
        precondition(size > 0, "a pool needs a helper")
        self.launch = launch
        self.size = size
        self.addressSpaceCeiling = addressSpaceCeiling
        self.logger = logger
        self.onDeath = onDeath
        // A helper that fails to start is retried twice before the pool gives up (a start under heavy load once
        // delivered an unreadable `ready`; cause not found, see the commit that added this).
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
        let first = started!
        condition.lock()
        idle.append(first)
        live = 1
        condition.unlock()
        for _ in 1..<size { replaceInBackground() }
    }

    /// A session on an idle helper (one is started now if none is idle, which only happens while a replacement
    /// is still starting).
    func session(limits: ImageLimits, seams: RenderTestSeams?) throws -> any RenderSession {
        HelperRenderSession(helper: try checkOut(), pool: self, limits: limits, seams: seams)
    }

    /// Ends every helper (idle ones at once; busy ones when their session ends).
    public func shutdown() {
        condition.lock()
        closed = true
        let helpers = idle
        idle = []
        live -= helpers.count
        let ended = template
        template = nil
        condition.unlock()
        for helper in helpers { helper.kill() }
        ended?.end()
    }

    /// Helpers started and not yet ended.
    public var liveHelpers: Int {
        condition.lock()
        defer { condition.unlock() }
        return live
    }

    /// The template's pid while there is one (tests look at it).
    var templatePID: pid_t? {
        condition.lock()
        defer { condition.unlock() }
        return template?.pid
    }

    /// Helpers forked from a template so far (tests look at it).
    var forkedHelpers: Int {
        condition.lock()
        defer { condition.unlock() }
        return forked
    }

    // MARK: - Helpers in and out

    private func checkOut() throws -> HelperProcess {
        while true {
            condition.lock()
            let candidate = idle.popLast()
            condition.unlock()
            guard let helper = candidate else { break }
            // An idle helper has nothing to say: a readable channel means it is gone (killed from outside).
            if (try? helper.channel.waitReadable(milliseconds: 0)) == false { return helper }
            retire(helper, death: helper.kill(), duringJob: false)
        }
        do {
            let helper = try start()
            condition.lock()
            live += 1
            condition.unlock()
            return helper
        } catch {
            throw RenderHelperUnavailable(description: "no render helper could start: \(error)")
        }
    }

    /// A session's helper, alive and idle again.
    fileprivate func checkIn(_ helper: HelperProcess) {
        condition.lock()
        // One started for a job while the spare was still starting is one too many now.
        if closed || live > size {
            live -= 1
            condition.unlock()
            helper.kill()
            return
        }
        helper.checkIns += 1
        let checkIn = helper.checkIns
        idle.append(helper)
        condition.unlock()
        // Still idle when the helper gives its heap back, it loses its memory files too: a busy pool keeps their
        // pages for the next job, an idle one holds neither them nor a photo.
        // By identity: HelperProcess is not Sendable. A later helper at the same address with the same check-in
        // count would only lose its files early, which its next job makes again.
        let id = ObjectIdentifier(helper)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(RenderHelperServer.idleTrimDelay))) {
            [weak self] in self?.closeFilesIfStillIdle(id, checkIn: checkIn)
        }
    }

    private func closeFilesIfStillIdle(_ id: ObjectIdentifier, checkIn: Int) {
        condition.lock()
        defer { condition.unlock() }
        guard let helper = idle.first(where: { ObjectIdentifier($0) == id }), helper.checkIns == checkIn else { return }
        helper.closeJobFiles()
    }

    /// Helpers idle now (tests look at it: with all `size` idle, no replacement is still starting).
    var idleHelpers: Int {
        condition.lock()
        defer { condition.unlock() }
        return idle.count
    }

    /// Idle helpers that hold memory files now (tests look at it).
    var idleHelpersWithFiles: Int {
        condition.lock()
        defer { condition.unlock() }
        return idle.filter(\.hasJobFiles).count
    }

    /// A helper that ended (died, or was killed at a deadline): counted, and replaced.
    fileprivate func retire(_ helper: HelperProcess, death: HelperProcess.Death, duringJob: Bool) {
        // Killed at a deadline, or out of memory (an exit that fails its job as such): not a crash.
        if duringJob, !helper.killedByPool, !death.outOfMemory { onDeath(death.signal) }
        condition.lock()
        live -= 1
        let replace = !closed
        condition.unlock()
        if replace { replaceInBackground() }
    }

    private func replaceInBackground() {
        condition.lock()
        live += 1
        condition.unlock()
        Thread.detachNewThread { [self] in
            let clock = ContinuousClock()
            let began = clock.now
            do {
                let helper = try start()
                condition.lock()
                let keep = !closed && live <= size
                if keep { idle.append(helper) } else { live -= 1 }
                condition.unlock()
                if !keep { helper.kill() }
                logger.debug("render helper started", metadata: ["start_time": "\(clock.now - began)"])
            } catch {
                condition.lock()
                live -= 1
                condition.unlock()
                logger.error("a render helper could not start", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Starts a helper and waits for its `ready`.
    private func start() throws -> HelperProcess {
        let helper = try forkOrSpawn()
        do {
            let reply = try HelperRenderSession.receive(from: helper, cancellation: nil, timeout: Self.startTimeout)
            guard case .ready = reply else { throw RenderHelperCrash(signal: nil, exitStatus: -1) }
            if let ceiling = addressSpaceCeiling, let size = helper.addressSpace {
                let hard = size + ceiling + Self.addressSpaceHeadroom
                try helper.limitAddressSpace(hard, hard: hard)
            }
            return helper
        } catch {
            helper.kill()
            throw error
        }
    }

    /// A new helper process: forked from the template, or spawned when there is none. A template that fails is
    /// ended and replaced; a replacement that fails its first fork turns templates off for this pool (logged).
    private func forkOrSpawn() throws -> HelperProcess {
        for fresh in [false, true] {
            guard let current = currentTemplate() else { break }
            do {
                let helper = try current.fork()
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
            }
        }
        return try HelperProcess.spawn(
            executable: launch.executable, arguments: launch.arguments, cores: launch.cores?.descriptor)
    }

    /// The template, started now if there is none; nil once the pool is closed or templates are off.
    private func currentTemplate() -> HelperTemplate? {
        condition.lock()
        defer { condition.unlock() }
        if template == nil, !closed, !templatesOff {
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

/// One job on one helper.
final class HelperRenderSession: RenderSession {
    private var helper: HelperProcess?
    private let pool: RenderHelperPool
    private let limits: ImageLimits
    private let seams: RenderTestSeams?
    /// The helper's memory files, once this session's probe has written the photo into them.
    private var files: HelperProcess.JobFiles?
    /// The helper's address space when the job began, plus the source twice (as read, and libvips' copy).
    private var baseline = 0

    init(helper: HelperProcess, pool: RenderHelperPool, limits: ImageLimits, seams: RenderTestSeams?) {
        self.helper = helper
        self.pool = pool
        self.limits = limits
        self.seams = seams
    }

    func probe(
        _ source: [UInt8], input: CropInput, options: RenderOptions, cancellation: RenderCancellation?
    ) throws -> ProbeResult {
        let helper = try current()
        let files = try helper.jobFiles()
        try files.source.write([source])
        self.files = files
        baseline = (helper.addressSpace ?? 0) + 2 * source.count
        try helper.limitAddressSpace(baseline + RenderHelperPool.addressSpaceHeadroom)
        let job = ProbeJob(sourceLength: source.count, input: input, options: options, limits: limits, seams: seams)
        switch try exchange(.probe(job), descriptors: [files.source.descriptor, files.result.descriptor], cancellation)
        {
        case .probed(let probed): return probed
        default: throw protocolBroken()
        }
    }

    func render(fallback: Bool, reservedBytes: Int, cancellation: RenderCancellation?) throws -> RenderResult {
        let helper = try current()
        guard let result = files?.result else { throw ImagingError(.invalidRequest, detail: "render before probe") }
        try helper.limitAddressSpace(baseline + reservedBytes + RenderHelperPool.addressSpaceHeadroom)
        switch try exchange(.render(fallback: fallback), descriptors: [], cancellation) {
        case .rendered(let rendered): return try rendered.result(reading: result)
        default: throw protocolBroken()
        }
    }

    /// The helper's memory files while this session has them (tests look at what a job leaves in them).
    var jobFiles: HelperProcess.JobFiles? { files }

    /// The helper's pid while the session has one (tests look at its /proc entry).
    var helperPID: pid_t? { helper?.pid }

    func end() {
        let files = self.files
        self.files = nil
        guard let helper else { return }
        self.helper = nil
        if let files {
            // The helper's next job (another user's) finds no rendition of this one, and no larger photo stays.
            do {
                try files.result.zeroFill()
                try files.source.release(ifLargerThan: RenderHelperPool.keptSourceBytes)
            } catch {
                pool.retire(helper, death: helper.kill(), duringJob: false)
                return
            }
        }
        pool.checkIn(helper)
    }

    private func current() throws -> HelperProcess {
        guard let helper else { throw RenderHelperCrash(signal: nil, exitStatus: -1) }
        return helper
    }

    /// Sends `request` and waits for the reply; a `failed` reply is thrown as the `ImagingError` it carries.
    private func exchange(
        _ request: HelperRequest, descriptors: [Int32], _ cancellation: RenderCancellation?
    ) throws -> HelperReply {
        let helper = try current()
        do {
            try helper.channel.send(try HelperCoding.encode(request), descriptors: descriptors)
            let reply = try Self.receive(from: helper, cancellation: cancellation, timeout: nil)
            if case .failed(let code, let detail) = reply {
                throw ImagingError(ImagingError.Code(rawValue: code), detail: detail)
            }
            return reply
        } catch let error as ImagingError where error.code == .cancelled && helper.killedByPool {
            lose(helper, duringJob: true)
            throw error
        } catch let crash as RenderHelperCrash {
            lose(helper, duringJob: true)
            throw Self.failure(crash)
        } catch is DecodingError {
            throw protocolBroken()
        } catch let error as HelperSystemError {
            // A send to a helper that just died fails before its end is read: what ended it is the answer.
            let death = helper.kill()
            lose(helper, duringJob: true)
            if death.signal != nil || death.outOfMemory { throw Self.failure(RenderHelperCrash(death)) }
            throw error
        }
    }

    /// What a helper's end means for its job: an allocation refused at its limit is `out_of_memory`; anything
    /// else is the crash.
    private static func failure(_ crash: RenderHelperCrash) -> Error {
        guard HelperProcess.Death(signal: crash.signal, exitStatus: crash.exitStatus).outOfMemory else { return crash }
        return ImagingError(.outOfMemory, detail: "the render helper's allocation was refused at its memory limit")
    }

    /// A helper that broke the protocol is not trusted with another job.
    private func protocolBroken() -> Error {
        if let helper {
            helper.kill()
            lose(helper, duringJob: false)
        }
        return RenderHelperCrash(signal: nil, exitStatus: -1)
    }

    private func lose(_ helper: HelperProcess, duringJob: Bool) {
        self.helper = nil
        pool.retire(helper, death: helper.reap(), duringJob: duringJob)
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
