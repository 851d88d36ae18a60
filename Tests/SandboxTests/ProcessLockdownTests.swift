import Glibc
import Sandbox
import Testing

/// Each test locks a child process down (an exit test: the lockdown cannot be undone, so it must not
/// touch the test runner) and tries what a hostile file could make a decoder do. Every child first
/// makes the same call unlocked, so a test fails if the call would not have worked anyway. The exit
/// codes name the step that went wrong.
@Suite("Process lockdown")
struct ProcessLockdownTests {
    @Test("a locked-down process cannot open a network or IPC endpoint, nor connect one it holds")
    func noSockets() async {
        await #expect(processExitsWith: .success) {
            let before = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard before >= 0 else { exit(10) }
            close(before)
            let unconnected = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard unconnected >= 0 else { exit(11) }
            do { try ProcessLockdown.apply() } catch { exit(12) }
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

    @Test("a locked-down process that tries to start a program is killed")
    func execKills() async {
        await #expect(processExitsWith: .signal(SIGSYS)) {
            do { try ProcessLockdown.apply() } catch { exit(12) }
            let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
            execv("/bin/true", arguments)
            exit(20)  // execv returned: it was neither run nor refused by the kernel
        }
    }

    @Test("a locked-down process cannot start a process")
    func noFork() async {
        await #expect(processExitsWith: .success) {
            do { try ProcessLockdown.apply() } catch { exit(12) }
            let child = fork()
            if child == 0 { _exit(30) }  // a child was made: fail through its exit code in both
            guard child == -1, errno == EPERM else { exit(31) }
            exit(0)
        }
    }

    @Test("a locked-down process reads files but cannot write, create, rename or delete one")
    func readOnlyFiles() async {
        await #expect(processExitsWith: .success) {
            var template = Array("/tmp/lockdown-XXXXXX".utf8CString)
            guard mkdtemp(&template) != nil else { exit(40) }
            let directory = String(cString: template)
            let existing = directory + "/existing"
            let made = open(existing, O_WRONLY | O_CREAT, 0o600)
            guard made >= 0, write(made, "x", 1) == 1 else { exit(41) }
            close(made)
            do { try ProcessLockdown.apply() } catch { exit(12) }

            let reading = open(existing, O_RDONLY)
            guard reading >= 0 else { exit(42) }
            close(reading)
            for flags in [O_WRONLY, O_RDWR, O_RDONLY | O_APPEND, O_RDONLY | O_TRUNC, O_RDONLY | O_CREAT] {
                guard open(existing, flags, 0o600) == -1, errno == EACCES else { exit(43) }
            }
            guard open(directory + "/new", O_WRONLY | O_CREAT | O_EXCL, 0o600) == -1 else { exit(44) }
            guard creat(directory + "/created", 0o600) == -1, errno == EPERM else { exit(45) }
            guard unlink(existing) == -1, errno == EPERM else { exit(46) }
            guard rename(existing, directory + "/renamed") == -1, errno == EPERM else { exit(47) }
            guard mkdir(directory + "/sub", 0o700) == -1, errno == EPERM else { exit(48) }
            guard chmod(existing, 0o666) == -1, errno == EPERM else { exit(49) }
            guard truncate(existing, 0) == -1, errno == EPERM else { exit(50) }
            exit(0)
        }
    }

    @Test("a locked-down process signals itself but no other process")
    func signalsStayHome() async {
        await #expect(processExitsWith: .success) {
            guard kill(getppid(), 0) == 0 else { exit(60) }
            do { try ProcessLockdown.apply() } catch { exit(12) }
            guard kill(getppid(), 0) == -1, errno == EPERM else { exit(61) }
            guard kill(0, 0) == -1, errno == EPERM else { exit(62) }  // its process group: the worker too
            guard kill(-1, 0) == -1, errno == EPERM else { exit(63) }
            guard kill(getpid(), 0) == 0 else { exit(64) }
            exit(0)
        }
    }

    @Test("a locked-down process reads its limits but cannot change them")
    func limitsStay() async {
        await #expect(processExitsWith: .success) {
            var limit = rlimit()
            guard getrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit) == 0 else { exit(80) }
            guard setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit) == 0 else { exit(81) }
            do { try ProcessLockdown.apply() } catch { exit(12) }
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
            do { try ProcessLockdown.apply() } catch { exit(12) }
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
