import CHelperProcess
import Foundation
import Glibc
import Sandbox

/// The worker's handle on one helper process: its pid and its end of the channel. The process was started
/// by `spawn` from the worker's own binary, with no environment but `environment`, its standard streams on
/// /dev/null (its stderr cannot carry anything into the worker's log) and no descriptor but its channel.
final class HelperProcess {
    /// How a helper ended.
    struct Death: Sendable, Equatable {
        /// The signal that killed it; nil when it exited.
        var signal: Int32?
        var exitStatus: Int32

        /// It exited because an allocation was refused where its library aborts (`RenderHelperServer.outOfMemory`):
        /// its job's memory, not a crash.
        var outOfMemory: Bool { signal == nil && exitStatus == RenderHelperServer.outOfMemory }
    }

    let pid: pid_t
    let channel: HelperChannel
    private(set) var death: Death?
    /// The pool killed it (at a job's deadline, or for a refused reply): its death is not a crash.
    var killedByPool = false
    /// The layers its lockdown put on, as its `ready` said.
    var lockdown: ProcessLockdown.Layers = []
    /// It was forked from a warm template (it started from the template's warm-up, not its own).
    var forkedWarm = false
    /// It rehearsed a job before it said `ready` (`HelperPoolState`).
    var rehearsed = false

    init(pid: pid_t, channel: HelperChannel) {
        self.pid = pid
        self.channel = channel
    }

    /// The whole environment a helper gets: no database URL, key or token, only the Swift runtime told not to
    /// keep a crashed helper alive to print a backtrace (its stderr goes nowhere; the worker counts the signal). And
    /// OpenBLAS (which OpenCV's face network links) told to start no thread pool of its own: a helper finds faces on
    /// one thread (`cv::setNumThreads(1)`), and the template forks only while it has a single thread
    /// (`CHelperTemplate.c`). And libvips' home pointed where no directory can be, so it loads none of its modules
    /// at start: a helper loads the HEIF one alone (`Vips`), not ImageMagick's, Poppler's, OpenSlide's and JPEG XL's,
    /// whose 22 libraries every helper would otherwise map, copy at its fork and tear down at its end, and whose
    /// loaders are refused anyway.
    static let environment = [
        "SWIFT_BACKTRACE=enable=no", "OPENBLAS_NUM_THREADS=1", "VIPSHOME=/dev/null",
    ]

    /// The descriptor a helper finds its worker's decode cores on.
    static let coresDescriptor = CHELPER_CORES_FD

    /// The hidden subcommand a helper runs (`avatar-cropper render-helper`; the template renames its helpers to it).
    static let subcommand = CHELPER_SUBCOMMAND

    /// Exit status of a helper that could not start (or of a template whose channel failed).
    static let startFailed = Int32(CHELPER_START_FAILED)

    /// `cores`: the worker's decode cores' memory file, which the helper gets as `coresDescriptor`.
    static func spawn(executable: String, arguments: [String], cores: Int32?) throws(HelperSystemError)
        -> HelperProcess
    {
        let (parent, child) = try HelperChannel.pair()
        defer { _ = Glibc.close(child) }
        var pid: pid_t = 0
        let argv = [executable] + arguments
        let result = withCStrings(argv) { argv in
            withCStrings(environment) { envp in chelper_spawn(executable, argv, envp, child, cores ?? -1, &pid) }
        }
        guard result == 0 else {
            parent.close()
            throw HelperSystemError("posix_spawn", Int(result))
        }
        return HelperProcess(pid: pid, channel: parent)
    }

    /// Its address space now (`/proc/PID/statm`'s first field), nil once it is gone.
    var addressSpace: Int? {
        let descriptor = open("/proc/\(pid)/statm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { _ = Glibc.close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0, let pages = Int(String(decoding: buffer[..<count].prefix { $0 != 0x20 }, as: UTF8.self))
        else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Caps its address space (`RLIMIT_AS`): an allocation past it fails inside the helper. `hard` (lowered only,
    /// once per helper) bounds what the helper could raise its own soft limit to.
    func limitAddressSpace(_ bytes: Int, hard: Int? = nil) throws(HelperSystemError) {
        let result = chelper_limit_address_space(pid, UInt64(max(bytes, 1)), UInt64(max(hard ?? 0, 0)))
        guard result == 0 else { throw HelperSystemError("prlimit", Int(result)) }
    }

    /// Caps the CPU time it may use from now on (`RLIMIT_CPU`, soft: the kernel sends SIGXCPU past it) to `seconds`
    /// more than it has used; nil lifts the cap (a job's own time is bounded by its deadline).
    func allowCPU(seconds: Int?) throws(HelperSystemError) {
        var limit: UInt64 = 0
        if let seconds {
            guard let used = cpuSeconds else { throw HelperSystemError("/proc/PID/stat", -Int(ESRCH)) }
            limit = UInt64(used + seconds)
        }
        let result = chelper_limit_cpu(pid, limit)
        guard result == 0 else { throw HelperSystemError("prlimit(RLIMIT_CPU)", Int(result)) }
    }

    /// The CPU seconds it has used, rounded up (`/proc/PID/stat`'s utime and stime), nil once it is gone.
    var cpuSeconds: Int? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 13,
            let user = Int(fields[11]), let system = Int(fields[12])
        else { return nil }
        let ticks = Int(sysconf(Int32(_SC_CLK_TCK)))
        return (user + system + ticks - 1) / max(ticks, 1)
    }

    /// Ends it at once (SIGKILL) and waits for it; its channel is closed.
    @discardableResult
    func kill() -> Death {
        sendKill()
        return reap()
    }

    /// Sends it SIGKILL, unless it was reaped already: it runs none of its own code after this returns. `reap` it.
    func sendKill() {
        if death == nil { _ = Glibc.kill(pid, SIGKILL) }
    }

    /// Waits for it to end (after its channel said it is gone, or after `kill`).
    @discardableResult
    func reap() -> Death {
        if let death { return death }
        var signal: Int32 = 0
        var status: Int32 = 0
        let result = chelper_reap(pid, &signal, &status)
        let ended = Death(signal: result == 0 && signal != 0 ? signal : nil, exitStatus: status)
        death = ended
        channel.close()
        return ended
    }
}

extension HelperProcess {
    /// In a helper: a failed C++ allocation (`operator new`) ends the process with `_exit(status)` instead of an
    /// abort the worker would read as a crash.
    static func exitOnFailedNew(status: Int32) {
        chelper_exit_on_failed_new(status)
    }

    /// In an idle helper: the heap's free pages go back to the kernel, so an idle helper (the spare, or any at low
    /// load) holds what it needs rather than what its largest job took (a 24 MP HEIC's tiles and pixels).
    static func trimHeap() {
        _ = chelper_trim_heap()
    }

    /// In a helper, and in its template before the warm-up: no file may grow (`chelper_refuse_file_growth`), so
    /// liborc keeps the code it compiles in private memory, never in a file mapping that every helper forked from the
    /// template would share. False when the limit could not be set.
    static func refuseFileGrowth() -> Bool {
        chelper_refuse_file_growth() == 0
    }
}

/// `body` with `strings` as a NULL-terminated C array (valid only inside `body`).
private func withCStrings<Result>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> Result) -> Result {
    let pointers = strings.map { strdup($0) } + [nil]
    defer { pointers.forEach { free($0) } }
    return body(pointers)
}
