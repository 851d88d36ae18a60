import CHelperProcess
import Foundation
import Glibc

/// The process render helpers are forked from (docs/ARCHITECTURE.md §3, "Render helpers"; `CHelperTemplate.c`):
/// the worker's binary started once, which loads its libraries, warms up as a helper would (libvips, the face model,
/// a render in every format) and waits for its libvips workers to leave, so a new helper costs a fork and its
/// lockdown, not an exec, the dynamic loader's 134 libraries and every library's start. Until it is ready (about
/// 15 s after it starts: libvips ends an idle worker then), `fork` has no helper for the pool, which spawns one.
///
/// The template is spawned as a helper is (`HelperProcess.spawn`: empty environment, the channel and the decode cores
/// its only descriptors) and passes both on to each helper. A helper it forks becomes the worker's own child (the
/// worker is made a child subreaper), so the pool reaps, kills and limits it as any other.
final class HelperTemplate {
    private let process: HelperProcess
    /// Held for a fork's whole exchange, and by `end` while it reaps: its channel is never closed under a fork.
    private let lock = NSLock()
    /// Guards `ended`: the template is killed and reaped once, however many threads found it failed.
    private let state = NSLock()
    private var ended = false
    /// What the template said once it could fork (`CHELPER_TEMPLATE_WARM` or `_COLD`); nil before. Under `lock`.
    private var readiness: Int32?

    var pid: pid_t { process.pid }
    /// Its process name (`comm`), which the helpers it forks share.
    let name: String

    private init(process: HelperProcess) {
        self.process = process
        let comm = (try? String(contentsOfFile: "/proc/\(process.pid)/comm", encoding: .utf8)) ?? ""
        name = comm.trimmingCharacters(in: .newlines)
    }

    /// Starts a template that forks helpers as `executable render-helper options`.
    static func start(executable: String, options: [String], cores: Int32?) throws(HelperSystemError) -> HelperTemplate
    {
        let result = chelper_become_subreaper()
        guard result == 0 else { throw HelperSystemError("prctl(PR_SET_CHILD_SUBREAPER)", Int(result)) }
        return HelperTemplate(
            process: try HelperProcess.spawn(
                executable: executable, arguments: [CHELPER_TEMPLATE_SUBCOMMAND] + options, cores: cores))
    }

    /// Longest the template may take to answer a fork (it forks twice and waits for the middle process), on a loaded
    /// machine.
    static let answerTimeout: Int32 = 30_000

    /// A new helper forked from the template, which renders a generated photo before it says `ready` when
    /// `rehearsed` and the template forks warm (`AvatarRenderer.rehearse`); nil while the template is not ready yet.
    /// Throws when the template is gone, failed or does not answer: it is then of no more use (`end` it).
    func fork(rehearsed: Bool) throws(HelperSystemError) -> HelperProcess? {
        lock.lock()
        defer { lock.unlock() }
        guard try isReady(waiting: 0) else { return nil }
        let (parent, child) = try HelperChannel.pair()
        defer { _ = Glibc.close(child) }
        do throws(HelperSystemError) {
            try process.channel.send([rehearsed ? UInt8(CHELPER_FORK_REHEARSED) : 0], descriptors: [child])
            guard try process.channel.waitReadable(milliseconds: Self.answerTimeout),
                let answer = try process.channel.receive(), answer.bytes.count == MemoryLayout<Int32>.size
            else { throw HelperSystemError("the helper template's answer", -Int(EPIPE)) }
            let pid = answer.bytes.withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }
            guard pid > 0 else { throw HelperSystemError("fork", Int(pid)) }
            return HelperProcess(pid: pid, channel: parent)
        } catch {
            parent.close()
            throw error
        }
    }

    /// Whether the template is ready to fork, waiting up to `milliseconds` for it (the bench and the tests wait for
    /// the steady state). Throws as `fork` does.
    func waitUntilReady(milliseconds: Int32) throws(HelperSystemError) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return try isReady(waiting: milliseconds)
    }

    /// Whether the helpers it forks start warmed up (false until it is ready, and for a binary whose template cannot
    /// warm up: its helpers start themselves).
    var forksWarm: Bool {
        lock.lock()
        defer { lock.unlock() }
        return readiness == CHELPER_TEMPLATE_WARM
    }

    /// With `lock` held: whether the template has said it is ready (its first message), waiting up to `milliseconds`.
    private func isReady(waiting milliseconds: Int32) throws(HelperSystemError) -> Bool {
        state.lock()
        let gone = ended
        state.unlock()
        if gone { throw HelperSystemError("the helper template", -Int(EPIPE)) }
        if readiness != nil { return true }
        guard try process.channel.waitReadable(milliseconds: milliseconds) else { return false }
        guard let message = try process.channel.receive(), message.bytes.count == MemoryLayout<Int32>.size,
            message.descriptors.isEmpty
        else { throw HelperSystemError("the helper template's start", -Int(EPIPE)) }
        let said = message.bytes.withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }
        guard said == CHELPER_TEMPLATE_WARM || said == CHELPER_TEMPLATE_COLD else {
            throw HelperSystemError("the helper template's start", said < 0 ? Int(said) : -Int(EPROTO))
        }
        readiness = said
        return true
    }

    /// Ends the template (its helpers live on: each has its own channel). Safe to call from several threads, and
    /// while another forks: the kill makes that fork read the channel's end, and the reap waits for it.
    func end() {
        state.lock()
        if ended {
            state.unlock()
            return
        }
        ended = true
        state.unlock()
        // After any fork in flight has its answer (at most `answerTimeout`): killed in the middle of one, the template
        // would leave its middle process and the new helper to the worker, which adopts them (`reapOrphans`).
        lock.lock()
        process.kill()
        lock.unlock()
    }

    /// Reaps what a template that died in the middle of a fork left this process (a child subreaper): its middle
    /// process and the helper it forked, zombies named as helpers are whose pids are not in `known`. Returns how many.
    @discardableResult
    static func reapOrphans(named name: String, known: [pid_t]) -> Int {
        Int(known.withUnsafeBufferPointer { chelper_reap_orphans(name, $0.baseAddress, Int32($0.count)) })
    }
}
