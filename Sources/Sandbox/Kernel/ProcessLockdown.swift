import CSandbox

/// The kernel-enforced limits a render helper puts on itself once its libraries are loaded
/// (docs/ARCHITECTURE.md §7): after `apply()`, no code in the process — ours, libvips', libheif's or a
/// decoder plugin's, exploited or not — can open a network or IPC endpoint, start a program or a
/// process, write, create or rename a file, signal another process, or reach the kernel's wider
/// surface (ptrace, mount, bpf, io_uring, ...). An `execve` kills the process; the other calls fail
/// with `EPERM` (`EACCES` for an open that would write), so a library that tries one degrades instead
/// of crashing. Reading files, threads, memory, `memfd_create` and the descriptors already open stay.
/// The process is also made non-dumpable with no core files. The full list is in `csandbox.h`.
///
/// It applies to every thread of the process and cannot be undone, so a process calls it once, at the
/// end of its start-up: a library loaded lazily afterwards can still read its files but not write them.
public enum ProcessLockdown {
    /// Installs the lockdown on the calling process.
    public static func apply() throws(LockdownError) {
        var message = [CChar](repeating: 0, count: 256)
        let status = message.withUnsafeMutableBufferPointer { buffer in
            csandbox_lock_down(buffer.baseAddress, buffer.count)
        }
        guard status == 0 else {
            let reason = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            throw LockdownError(reason: reason)
        }
    }
}

/// The kernel refused to install the lockdown (a kernel without seccomp, or a limit on filters).
/// A render helper that cannot lock itself down must not take a job.
public struct LockdownError: Error, CustomStringConvertible, Sendable {
    public let reason: String
    public var description: String { "process lockdown failed: \(reason)" }
}
