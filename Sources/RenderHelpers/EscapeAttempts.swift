import Glibc
import Imaging

#if AVATAR_TEST_SEAMS
    /// TEST-ONLY (debug builds, `RenderTestSeams`): code an upload took over, running in the locked-down helper. A
    /// source whose bytes contain `AVATAR-TEST-ESCAPE=<worker pid>,<photo descriptor>,<secrets path>;` makes the
    /// helper, just before its render, try each escape of the attack on the render helpers (docs/SECURITY.md, "What a
    /// render helper may do") with libc's own calls, as injected code would. An escape that works fails the render as
    /// `processing_failed` naming it; when every one was refused, the last — `fcntl(F_SETOWN)` toward the worker,
    /// outside the allow-list — kills the helper with SIGSYS, which is the answer the test waits for.
    enum EscapeAttempts {
        static let marker = Array("AVATAR-TEST-ESCAPE=".utf8)

        /// The escapes, each true when it worked.
        static func attempts(worker: pid_t, photo: Int32, secrets: String) -> [(String, () -> Bool)] {
            func opens(_ path: String) -> Bool {
                let descriptor = open(path, O_RDONLY | O_NONBLOCK)
                if descriptor >= 0 { close(descriptor) }
                return descriptor >= 0
            }
            return [
                ("read the worker's environment", { opens("/proc/\(worker)/environ") }),
                ("read a secrets file of its uid", { opens(secrets) }),
                ("open another job's photo through the worker's descriptor", { opens("/proc/\(worker)/fd/\(photo)") }),
                ("read /etc/passwd", { opens("/etc/passwd") }),
                ("open the worker's memory", { opens("/proc/\(worker)/mem") }),
                ("list the worker's descriptors", { opendir("/proc/\(worker)/fd") != nil }),
                (
                    "lower the worker's priority",
                    {
                        setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(worker), 19) == 0
                    }
                ),
                ("create SysV shared memory", { shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0o600) >= 0 }),
                (
                    "open a socket",
                    {
                        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                        if descriptor >= 0 { close(descriptor) }
                        return descriptor >= 0
                    }
                ),
                ("signal the worker", { kill(worker, 0) == 0 }),
                (
                    "start a process",
                    {
                        let child = fork()
                        if child == 0 { _exit(0) }
                        if child > 0 { waitpid(child, nil, 0) }
                        return child > 0
                    }
                ),
            ]
        }

        /// Runs the attack `source` asks for, if any.
        static func run(_ source: [UInt8]) throws(ImagingError) {
            guard let end = RenderTestSeams.find(marker, in: source) else { return }
            let fields = String(decoding: source[end...].prefix { $0 != UInt8(ascii: ";") }, as: UTF8.self)
                .split(separator: ",", maxSplits: 2).map(String.init)
            guard fields.count == 3, let worker = pid_t(fields[0]), let photo = Int32(fields[1]) else {
                throw ImagingError(.invalidRequest, detail: "test seam: a malformed escape marker")
            }
            for (name, attempt) in attempts(worker: worker, photo: photo, secrets: fields[2]) where attempt() {
                throw ImagingError(.processingFailed, detail: "escape worked: \(name)")
            }
            _ = fcntl(HelperChannel.helperDescriptor, F_SETOWN, worker)
            throw ImagingError(.processingFailed, detail: "escape worked: fcntl(F_SETOWN) toward the worker")
        }
    }
#endif
