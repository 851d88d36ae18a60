import Foundation
import Glibc
import Sandbox
import Testing

/// Each test locks a child process down (an exit test: the lockdown cannot be undone, so it must not
/// touch the test runner) and tries what code an upload took over could make a decoder do. Every child first
/// makes the same call unlocked, so a test fails if the call would not have worked anyway. The exit
/// codes name the step that went wrong. docs/SECURITY.md states what the lockdown promises.
@Suite("Process lockdown")
struct ProcessLockdownTests {
    /// The descriptor the children treat as their channel (a socket pair's end, made before the lockdown).
    static func lockDown(channel: Int32 = -1) {
        do { try ProcessLockdown.apply(SeccompFilter(channel: channel)) } catch { exit(12) }
    }

    @Test("a locked-down process cannot open a network or IPC endpoint, nor connect one it holds")
    func noSockets() async {
        await #expect(processExitsWith: .success) {
            let before = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard before >= 0 else { exit(10) }
            close(before)
            let unconnected = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard unconnected >= 0 else { exit(11) }
            ProcessLockdownTests.lockDown()
            for domain in [AF_INET, AF_INET6, AF_UNIX, AF_NETLINK] {
                guard socket(domain, Int32(SOCK_STREAM.rawValue), 0) == -1, errno == EPERM else { exit(13) }
            }
            var pair: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == -1, errno == EPERM else { exit(14) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(80).bigEndian
            address.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(unconnected, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == -1, errno == EPERM else { exit(15) }
            exit(0)
        }
    }

    @Test("a locked-down process sends and receives on its channel and on no other descriptor")
    func onlyItsChannel() async {
        await #expect(processExitsWith: .success) {
            var channel: [Int32] = [0, 0]
            var other: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &channel) == 0,
                socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &other) == 0
            else { exit(16) }
            ProcessLockdownTests.lockDown(channel: channel[0])
            var byte: UInt8 = 7
            func sent(_ descriptor: Int32) -> Int {
                withUnsafeMutablePointer(to: &byte) { bytePointer in
                    var vector = iovec(iov_base: bytePointer, iov_len: 1)
                    var message = msghdr()
                    return withUnsafeMutablePointer(to: &vector) { pointer in
                        message.msg_iov = pointer
                        message.msg_iovlen = 1
                        return sendmsg(descriptor, &message, 0)
                    }
                }
            }
            guard sent(channel[0]) == 1 else { exit(17) }
            guard sent(other[0]) == -1, errno == EPERM else { exit(18) }
            exit(0)
        }
    }

    @Test("a locked-down process that tries to start a program is killed")
    func execKills() async {
        await #expect(processExitsWith: .signal(SIGSYS)) {
            ProcessLockdownTests.lockDown()
            let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
            execv("/bin/true", arguments)
            exit(20)  // execv returned: it was neither run nor refused by the kernel
        }
    }

    @Test("a system call outside the allow-list kills the process")
    func unknownCallKills() async {
        await #expect(processExitsWith: .signal(SIGSYS)) {
            ProcessLockdownTests.lockDown()
            _ = chroot("/")
            exit(21)
        }
        // fcntl commands that reach another process (F_SETOWN: signal it with SIGIO) are not on the list either.
        await #expect(processExitsWith: .signal(SIGSYS)) {
            ProcessLockdownTests.lockDown()
            _ = fcntl(1, F_SETOWN, getppid())
            exit(22)
        }
    }

    @Test("a locked-down process cannot start a process")
    func noFork() async {
        await #expect(processExitsWith: .success) {
            ProcessLockdownTests.lockDown()
            let child = fork()
            if child == 0 { _exit(30) }  // a child was made: fail through its exit code in both
            guard child == -1, errno == EPERM else { exit(31) }
            exit(0)
        }
    }

    @Test("a locked-down process opens, looks at and changes no path, not even to read")
    func noPaths() async {
        await #expect(processExitsWith: .success) {
            var template = Array("/tmp/lockdown-XXXXXX".utf8CString)
            guard mkdtemp(&template) != nil else { exit(40) }
            let directory = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            let existing = directory + "/existing"
            let made = open(existing, O_WRONLY | O_CREAT, 0o644)
            guard made >= 0, write(made, "x", 1) == 1 else { exit(41) }
            close(made)
            guard chmod(directory, 0o755) == 0 else { exit(42) }
            var status = stat()
            guard stat(existing, &status) == 0 else { exit(42) }
            let held = open(existing, O_RDONLY)
            guard held >= 0 else { exit(42) }
            ProcessLockdownTests.lockDown()

            for path in [existing, "/etc/passwd", "/proc/self/environ", "/proc/\(getppid())/environ"] {
                for flags in [O_RDONLY, O_WRONLY, O_RDWR, O_RDONLY | O_CREAT] {
                    guard open(path, flags, 0o600) == -1, errno == EACCES else { exit(43) }
                }
            }
            guard stat(existing, &status) == -1, errno == EACCES else { exit(44) }
            guard access(existing, R_OK) == -1, errno == EACCES else { exit(44) }
            guard opendir(directory) == nil else { exit(44) }
            // What it already holds it may still read and fstat.
            guard fstat(held, &status) == 0, status.st_size == 1 else { exit(45) }
            var byte: UInt8 = 0
            guard read(held, &byte, 1) == 1, byte == UInt8(ascii: "x") else { exit(45) }
            guard creat(directory + "/created", 0o600) == -1, errno == EACCES else { exit(46) }
            guard unlink(existing) == -1, errno == EPERM else { exit(46) }
            guard rename(existing, directory + "/renamed") == -1, errno == EPERM else { exit(47) }
            guard mkdir(directory + "/sub", 0o700) == -1, errno == EPERM else { exit(48) }
            guard chmod(existing, 0o666) == -1, errno == EPERM else { exit(49) }
            guard truncate(existing, 0) == -1, errno == EPERM else { exit(50) }
            exit(0)
        }
    }

    @Test("a locked-down process writes no file, not even one it holds open")
    func noFileWrites() async {
        await #expect(processExitsWith: .success) {
            var template = Array("/tmp/lockdown-XXXXXX".utf8CString)
            let file = mkstemp(&template)
            guard file >= 0 else { exit(51) }
            unlink(template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
            guard write(file, "x", 1) == 1 else { exit(52) }
            signal(SIGXFSZ, SIG_IGN)  // a helper has SIGXFSZ's default and dies of it; here the write's error shows
            ProcessLockdownTests.lockDown()
            guard write(file, "y", 1) == -1, errno == EFBIG else { exit(53) }  // RLIMIT_FSIZE 0
            exit(0)
        }
    }

    @Test("a locked-down process signals itself but no other process, and has no IPC of its uid")
    func signalsStayHome() async {
        await #expect(processExitsWith: .success) {
            guard kill(getppid(), 0) == 0 else { exit(60) }
            ProcessLockdownTests.lockDown()
            guard kill(getppid(), 0) == -1, errno == EPERM else { exit(61) }
            guard kill(0, 0) == -1, errno == EPERM else { exit(62) }  // its process group: the worker too
            guard kill(-1, 0) == -1, errno == EPERM else { exit(63) }
            guard kill(getpid(), 0) == 0 else { exit(64) }
            guard setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(getppid()), 19) == -1, errno == EPERM
            else { exit(65) }
            guard shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0o600) == -1, errno == EPERM else { exit(66) }
            exit(0)
        }
    }

    @Test("an allow-list compiled before a fork holds in the fork, for the fork's own pid")
    func filterCompiledBeforeFork() async {
        await #expect(processExitsWith: .success) {
            // As a template compiles it once for the helpers it forks.
            guard let filter = try? SeccompFilter(channel: -1) else { exit(90) }
            // kill and tgkill to itself (libseccomp shares identical blocks, so one comparison may serve both).
            guard filter.selfComparisons >= 1 else { exit(91) }
            let child = fork()
            if child == 0 {
                do { try ProcessLockdown.apply(filter) } catch { _exit(12) }
                guard kill(getpid(), 0) == 0 else { _exit(92) }
                guard raise(0) == 0 else { _exit(93) }  // tgkill, to its own thread
                guard kill(getppid(), 0) == -1, errno == EPERM else { _exit(94) }
                guard socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0) == -1 else { _exit(95) }
                _exit(0)
            }
            var status: Int32 = 0
            guard child > 0, waitpid(child, &status, 0) == child else { exit(96) }
            // The child's own exit code names its failed step; killed (SIGSYS), 97.
            exit(status & 0x7F == 0 ? (status >> 8) & 0xFF : 97)
        }
    }

    @Test(
        "a process started as root with CAP_SYS_RESOURCE runs locked down as nobody; without it, as root with no capability"
    )
    func rootBecomesNobody() async throws {
        try #require(getuid() == 0, "needs root (CI and the image's tests run as root)")
        await #expect(processExitsWith: .success) {
            // Asked before the lockdown (it allows no open): CAP_SYS_RESOURCE (bit 24) in the effective set.
            let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
            let effective =
                status.split(separator: "\n").first { $0.hasPrefix("CapEff:") }
                .flatMap { UInt64($0.split(separator: "\t").last ?? "", radix: 16) } ?? 0
            let mayDrop = effective & (1 << 24) != 0
            do {
                let layers = try ProcessLockdown.apply(SeccompFilter(channel: -1))
                guard layers.contains(.seccomp), layers.contains(.uidDropped) == mayDrop else { exit(70) }
            } catch { exit(12) }
            let expected = mayDrop ? ProcessLockdown.unprivilegedID : 0
            guard getuid() == expected, geteuid() == expected, getgid() == expected else { exit(71) }
            exit(0)
        }
    }

    @Test("Landlock is a layer where the kernel offers it")
    func landlockWhereOffered() async throws {
        try #require(ProcessLockdown.landlockABI >= 1, "this kernel offers no Landlock")
        await #expect(processExitsWith: .success) {
            let abi = ProcessLockdown.landlockABI  // asked before: the lockdown refuses Landlock's calls
            do {
                let layers = try ProcessLockdown.apply(SeccompFilter(channel: -1))
                guard layers.contains(.landlockFiles) else { exit(72) }
                if abi >= 6, !layers.contains(.landlockScope) { exit(73) }
            } catch { exit(12) }
            exit(0)
        }
    }

    @Test("a locked-down process reads its limits but cannot change them")
    func limitsStay() async {
        await #expect(processExitsWith: .success) {
            var limit = rlimit()
            guard getrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit) == 0 else { exit(80) }
            guard setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit) == 0 else { exit(81) }
            ProcessLockdownTests.lockDown()
            guard getrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit) == 0 else { exit(82) }
            guard setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit) == -1, errno == EPERM else { exit(83) }
            exit(0)
        }
    }

    @Test("threads, memory and the descriptors already open keep working")
    func workKeepsWorking() async {
        await #expect(processExitsWith: .success) {
            var pipeEnds: [Int32] = [0, 0]
            guard pipe(&pipeEnds) == 0 else { exit(70) }
            ProcessLockdownTests.lockDown()
            var thread = pthread_t()
            let started = pthread_create(&thread, nil, { _ in nil }, nil)
            guard started == 0, pthread_join(thread, nil) == 0 else { exit(71) }
            let memory = UnsafeMutableRawPointer.allocate(byteCount: 64 << 20, alignment: 16)
            memory.initializeMemory(as: UInt8.self, repeating: 7, count: 64 << 20)
            memory.deallocate()
            guard write(pipeEnds[1], "ok", 2) == 2 else { exit(72) }
            var received: [UInt8] = [0, 0]
            guard read(pipeEnds[0], &received, 2) == 2, received == Array("ok".utf8) else { exit(73) }
            exit(0)
        }
    }
}
