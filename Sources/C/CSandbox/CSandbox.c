// The render helper's lockdown: csandbox.h says what each layer refuses; docs/SECURITY.md says why.
#define _GNU_SOURCE
#include "csandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int fail(char *message, size_t capacity, const char *format, ...) {
    if (message != NULL && capacity > 0) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(message, capacity, format, arguments);
        va_end(arguments);
    }
    return -1;
}

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

// MARK: - Privileges and limits

/// Whether the calling thread holds `cap` in its effective set.
static int has_capability(int cap) {
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &header, data) != 0) return 0;
    return (data[cap / 32].effective >> (cap % 32)) & 1;
}

/// Drops supplementary groups, every capability and, for root, the uid and gid. Sets CSANDBOX_LAYER_UID_DROPPED.
/// Root moves to CSANDBOX_UNPRIVILEGED_ID only when it holds CAP_SYS_RESOURCE: its worker (the same uid, the same
/// capabilities) limits the helper's address space and CPU for each job, which the kernel allows across uids only
/// with that capability; without it (a container that drops it) the helper stays uid 0 with no capability at all.
static int drop_privileges(int *layers, char *message, size_t capacity) {
    int root = (geteuid() == 0 || getuid() == 0) && has_capability(CAP_SYS_RESOURCE);
    // Without CAP_SETGID a process cannot change its groups; a process without it has none it could use to gain more.
    if (setgroups(0, NULL) != 0 && errno != EPERM) return fail(message, capacity, "setgroups: %s", strerror(errno));
    if (root) {
        if (setresgid(CSANDBOX_UNPRIVILEGED_ID, CSANDBOX_UNPRIVILEGED_ID, CSANDBOX_UNPRIVILEGED_ID) != 0)
            return fail(message, capacity, "setresgid: %s", strerror(errno));
        if (setresuid(CSANDBOX_UNPRIVILEGED_ID, CSANDBOX_UNPRIVILEGED_ID, CSANDBOX_UNPRIVILEGED_ID) != 0)
            return fail(message, capacity, "setresuid: %s", strerror(errno));
        *layers |= CSANDBOX_LAYER_UID_DROPPED;
    }
    // The bounding set needs CAP_SETPCAP to shrink: a process without it has nothing there it could raise.
    for (int cap = 0; cap <= 63; cap++) {
        if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) <= 0) continue;
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EPERM)
            return fail(message, capacity, "PR_CAPBSET_DROP: %s", strerror(errno));
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
        return fail(message, capacity, "PR_CAP_AMBIENT_CLEAR_ALL: %s", strerror(errno));
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3];
    memset(none, 0, sizeof none);
    if (syscall(SYS_capset, &header, none) != 0) return fail(message, capacity, "capset: %s", strerror(errno));
    return 0;
}

/// The highest descriptor open now (the channel, the decode cores, what libraries kept open).
static int highest_open_descriptor(void) {
    int highest = 2;
    for (int fd = 3; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) >= 0) highest = fd;
    return highest;
}

/// How many descriptors beyond those open at lockdown a helper may hold: a job's two memory files, with room.
#define CSANDBOX_SPARE_DESCRIPTORS 8

static int set_limits(char *message, size_t capacity) {
    struct rlimit none = {0, 0};
    rlim_t files = (rlim_t)highest_open_descriptor() + 1 + CSANDBOX_SPARE_DESCRIPTORS;
    struct rlimit descriptors = {files, files};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return fail(message, capacity, "RLIMIT_CORE: %s", strerror(errno));
    if (setrlimit(RLIMIT_FSIZE, &none) != 0) return fail(message, capacity, "RLIMIT_FSIZE: %s", strerror(errno));
    if (setrlimit(RLIMIT_MEMLOCK, &none) != 0) return fail(message, capacity, "RLIMIT_MEMLOCK: %s", strerror(errno));
    if (setrlimit(RLIMIT_MSGQUEUE, &none) != 0)
        return fail(message, capacity, "RLIMIT_MSGQUEUE: %s", strerror(errno));
    if (setrlimit(RLIMIT_NOFILE, &descriptors) != 0)
        return fail(message, capacity, "RLIMIT_NOFILE: %s", strerror(errno));
    return 0;
}

// MARK: - Landlock

// linux/landlock.h of Debian 12 (Linux 6.1) stops at ABI 2; the kernel may offer more.
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

/// The ruleset attribute as the newest ABI reads it; the kernel is given only the prefix its ABI knows.
struct csandbox_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

int csandbox_landlock_abi(void) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return abi > 0 ? (int)abi : 0;
}

/// Every file-system right the kernel's ABI knows, handled and granted to no path.
static uint64_t handled_fs(int abi) {
    uint64_t rights = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: EXECUTE … MAKE_SYM
    if (abi >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) rights |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5) rights |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    return rights;
}

static int apply_landlock(int *layers, char *message, size_t capacity) {
    int abi = csandbox_landlock_abi();
    if (abi < 1) return 0;  // not offered: the allow-list stands alone (docs/SECURITY.md)
    struct csandbox_ruleset_attr attributes = {.handled_access_fs = handled_fs(abi)};
    size_t size = sizeof attributes.handled_access_fs;
    if (abi >= 4) {
        attributes.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
        size = offsetof(struct csandbox_ruleset_attr, scoped);
    }
    if (abi >= 6) {
        attributes.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
        size = sizeof attributes;
    }
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attributes, size, 0);
    if (ruleset < 0) return fail(message, capacity, "landlock_create_ruleset: %s", strerror(errno));
    long restricted = syscall(SYS_landlock_restrict_self, ruleset, 0);
    int saved = errno;
    close(ruleset);
    if (restricted != 0) return fail(message, capacity, "landlock_restrict_self: %s", strerror(saved));
    *layers |= CSANDBOX_LAYER_LANDLOCK_FS;
    if (abi >= 4) *layers |= CSANDBOX_LAYER_LANDLOCK_NET;
    if (abi >= 6) *layers |= CSANDBOX_LAYER_LANDLOCK_SCOPE;
    return 0;
}

// MARK: - The seccomp allow-list

/// Allowed whatever their arguments: the channel's and memory files' reads and writes on descriptors it already
/// holds, memory, threads' futexes and signals to themselves, clocks and sleeps, and its own exit.
static const char *const allowed[] = {
    "read", "readv", "pread64", "preadv", "preadv2", "write", "writev", "pwrite64", "lseek", "close",
    "mmap", "munmap", "mprotect", "madvise", "mremap", "brk",
    "futex", "set_robust_list", "get_robust_list", "rseq", "set_tid_address", "membarrier",
    "clock_gettime", "clock_getres", "clock_nanosleep", "gettimeofday", "time", "nanosleep", "sched_yield",
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getrusage", "times", "getrandom",
    "getrlimit", "uname", "sysinfo",
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait", "sigaltstack",
    "poll", "ppoll", "select", "pselect6", "restart_syscall", "exit", "exit_group", "rt_sigsuspend",
    "fstat",
    // The Swift runtime's Dispatch, on the epoll instance, eventfd and timerfd it made before the lockdown.
    "epoll_wait", "epoll_pwait", "epoll_pwait2", "epoll_ctl", "timerfd_settime", "timerfd_gettime",
};

/// Refused with an errno rather than a kill: calls a library may make to probe, and copes when refused.
struct refusal {
    const char *name;
    int error;
};
static const struct refusal refused[] = {
    // Paths: nothing is opened, looked at or listed after the lockdown (whatever a library needs it loaded before).
    {"open", EACCES}, {"openat", EACCES}, {"openat2", ENOSYS}, {"creat", EACCES}, {"stat", EACCES},
    {"lstat", EACCES}, {"access", EACCES}, {"faccessat", EACCES}, {"faccessat2", EACCES}, {"readlink", EACCES},
    {"readlinkat", EACCES}, {"getdents64", EACCES}, {"getcwd", EACCES}, {"statfs", EACCES}, {"fstatfs", EACCES},
    {"chdir", EACCES}, {"fchdir", EACCES},
    {"unlink", EPERM}, {"unlinkat", EPERM}, {"rename", EPERM}, {"renameat", EPERM}, {"renameat2", EPERM},
    {"mkdir", EPERM}, {"mkdirat", EPERM}, {"rmdir", EPERM}, {"link", EPERM}, {"linkat", EPERM},
    {"symlink", EPERM}, {"symlinkat", EPERM}, {"chmod", EPERM}, {"fchmod", EPERM}, {"fchmodat", EPERM},
    {"chown", EPERM}, {"fchown", EPERM}, {"lchown", EPERM}, {"fchownat", EPERM}, {"truncate", EPERM},
    {"mknod", EPERM}, {"mknodat", EPERM}, {"utimensat", EPERM},
    // No endpoint, no new process, no new descriptor but what the channel brings.
    {"socket", EPERM}, {"socketpair", EPERM}, {"connect", EPERM}, {"bind", EPERM}, {"listen", EPERM},
    {"fork", EPERM}, {"vfork", EPERM}, {"clone3", ENOSYS}, {"memfd_create", EPERM}, {"eventfd2", EPERM},
    {"pipe", EPERM}, {"pipe2", EPERM}, {"dup", EPERM}, {"dup2", EPERM}, {"dup3", EPERM},
    {"epoll_create1", EPERM}, {"timerfd_create", EPERM}, {"inotify_init1", EPERM},
    // Nothing about other processes or the machine.
    {"ioctl", ENOTTY}, {"setpriority", EPERM}, {"getpriority", EPERM},
    {"sched_setscheduler", EPERM}, {"sched_setparam", EPERM}, {"sched_setattr", EPERM},
    {"sched_getscheduler", EPERM}, {"sched_getparam", EPERM}, {"sched_getattr", EPERM},
    {"setrlimit", EPERM}, {"unshare", EPERM}, {"tkill", EPERM}, {"rt_sigqueueinfo", EPERM},
    {"rt_tgsigqueueinfo", EPERM}, {"shmget", EPERM}, {"semget", EPERM}, {"msgget", EPERM}, {"mq_open", EPERM},
    {"mlock", EPERM}, {"mlock2", EPERM}, {"mlockall", EPERM}, {"ftruncate", EPERM}, {"fallocate", EPERM},
};

/// fcntl commands: descriptor flags, and the decode cores' record locks (CHEIFCores.c).
static const int allowed_fcntl[] = {
    F_GETFD, F_SETFD, F_GETFL, F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_GET_SEALS,
};

/// prctl options: a thread's name (GLib's and libvips' worker threads name themselves).
static const int allowed_prctl[] = {PR_SET_NAME, PR_GET_NAME};

static int rule(scmp_filter_ctx filter, uint32_t action, const char *name, unsigned count,
                const struct scmp_arg_cmp *comparisons, char *message, size_t capacity) {
    int number = seccomp_syscall_resolve_name(name);
    if (number == __NR_SCMP_ERROR) return 0;  // not a call of this architecture
    int rc = seccomp_rule_add_array(filter, action, number, count, comparisons);
    if (rc != 0) return fail(message, capacity, "seccomp rule for %s: %s", name, strerror(-rc));
    return 0;
}

static int allow_if(scmp_filter_ctx filter, const char *name, struct scmp_arg_cmp comparison, char *message,
                    size_t capacity) {
    return rule(filter, SCMP_ACT_ALLOW, name, 1, &comparison, message, capacity);
}

static int add_allow_list(scmp_filter_ctx filter, int channel, scmp_datum_t self, char *message, size_t capacity) {
    for (size_t i = 0; i < COUNT(allowed); i++)
        if (rule(filter, SCMP_ACT_ALLOW, allowed[i], 0, NULL, message, capacity) != 0) return -1;
    for (size_t i = 0; i < COUNT(refused); i++)
        if (rule(filter, SCMP_ACT_ERRNO(refused[i].error), refused[i].name, 0, NULL, message, capacity) != 0)
            return -1;
    // The channel is its only way out; an fstat (glibc's is fstatat with an empty path) names no path.
    if (allow_if(filter, "sendmsg", SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)channel), message, capacity) != 0 ||
        allow_if(filter, "recvmsg", SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)channel), message, capacity) != 0 ||
        allow_if(filter, "newfstatat", SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH), message,
                 capacity) != 0 ||
        allow_if(filter, "statx", SCMP_A2(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH), message, capacity) != 0)
        return -1;
    struct scmp_arg_cmp other_channel = SCMP_A0(SCMP_CMP_NE, (scmp_datum_t)channel);
    struct scmp_arg_cmp stat_path = SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, 0);
    struct scmp_arg_cmp statx_path = SCMP_A2(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, 0);
    if (rule(filter, SCMP_ACT_ERRNO(EPERM), "sendmsg", 1, &other_channel, message, capacity) != 0 ||
        rule(filter, SCMP_ACT_ERRNO(EPERM), "recvmsg", 1, &other_channel, message, capacity) != 0 ||
        rule(filter, SCMP_ACT_ERRNO(EACCES), "newfstatat", 1, &stat_path, message, capacity) != 0 ||
        rule(filter, SCMP_ACT_ERRNO(EACCES), "statx", 1, &statx_path, message, capacity) != 0)
        return -1;
    // Signals to itself only (raise, abort, a thread's cancellation); to anyone else EPERM.
    if (allow_if(filter, "kill", SCMP_A0(SCMP_CMP_EQ, self), message, capacity) != 0 ||
        allow_if(filter, "tgkill", SCMP_A0(SCMP_CMP_EQ, self), message, capacity) != 0)
        return -1;
    struct scmp_arg_cmp foreign = SCMP_A0(SCMP_CMP_NE, self);
    if (rule(filter, SCMP_ACT_ERRNO(EPERM), "kill", 1, &foreign, message, capacity) != 0 ||
        rule(filter, SCMP_ACT_ERRNO(EPERM), "tgkill", 1, &foreign, message, capacity) != 0)
        return -1;
    // A thread, never a process (CLONE_THREAD excludes new namespaces).
    struct scmp_arg_cmp thread = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD);
    struct scmp_arg_cmp not_thread = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
    if (rule(filter, SCMP_ACT_ALLOW, "clone", 1, &thread, message, capacity) != 0 ||
        rule(filter, SCMP_ACT_ERRNO(EPERM), "clone", 1, &not_thread, message, capacity) != 0)
        return -1;
    // Its own limits, read only (the address-space cap the worker moves job by job holds).
    struct scmp_arg_cmp read_own[] = {SCMP_A0(SCMP_CMP_EQ, 0), SCMP_A2(SCMP_CMP_EQ, 0)};
    struct scmp_arg_cmp sets_limit = SCMP_A2(SCMP_CMP_NE, 0);
    struct scmp_arg_cmp other_process = SCMP_A0(SCMP_CMP_NE, 0);
    if (rule(filter, SCMP_ACT_ALLOW, "prlimit64", 2, read_own, message, capacity) != 0 ||
        rule(filter, SCMP_ACT_ERRNO(EPERM), "prlimit64", 1, &sets_limit, message, capacity) != 0 ||
        rule(filter, SCMP_ACT_ERRNO(EPERM), "prlimit64", 1, &other_process, message, capacity) != 0)
        return -1;
    // CPU sets: reading any is allowed (thread pools size themselves by their own; glibc's pthread_getattr_np reads a
    // thread's by its tid); setting only the calling thread's (pid 0: an AV1 decode pins its thread to its decode
    // cores, CHEIFCores.c), another's EPERM.
    if (rule(filter, SCMP_ACT_ALLOW, "sched_getaffinity", 0, NULL, message, capacity) != 0 ||
        allow_if(filter, "sched_setaffinity", SCMP_A0(SCMP_CMP_EQ, 0), message, capacity) != 0 ||
        rule(filter, SCMP_ACT_ERRNO(EPERM), "sched_setaffinity", 1, &other_process, message, capacity) != 0)
        return -1;
    // Any other fcntl command (F_SETOWN, F_SETSIG, F_SETLEASE, F_NOTIFY, F_DUPFD…) or prctl option kills.
    for (size_t i = 0; i < COUNT(allowed_fcntl); i++)
        if (allow_if(filter, "fcntl", SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)allowed_fcntl[i]), message, capacity) != 0)
            return -1;
    for (size_t i = 0; i < COUNT(allowed_prctl); i++)
        if (allow_if(filter, "prctl", SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)allowed_prctl[i]), message, capacity) != 0)
            return -1;
    return 0;
}

/// Where the compiled program compares with the process's own pid (`kill` and `tgkill` to itself): a value no pid
/// can take (pid_max is at most 2^22), replaced by the pid of the process that loads it.
#define SELF_PLACEHOLDER 0x5AFE5E1Fu

struct csandbox_filter {
    struct sock_filter *program;
    unsigned short length;
};

/// libseccomp's program for `channel`, read back from the BPF it exports (libseccomp 2.5 exports to a descriptor
/// only: a memory file, so it needs RLIMIT_FSIZE above the program's size), with SELF_PLACEHOLDER where the pid goes.
struct csandbox_filter *csandbox_filter_prepare(int channel, char *message, size_t capacity) {
    scmp_filter_ctx context = seccomp_init(SCMP_ACT_KILL_PROCESS);
    if (context == NULL) {
        fail(message, capacity, "seccomp_init failed");
        return NULL;
    }
    struct csandbox_filter *filter = calloc(1, sizeof *filter);
    int exported = -1;
    int rc;
    struct stat status;
    if (filter == NULL) {
        fail(message, capacity, "seccomp program: out of memory");
        goto failed;
    }
    if (add_allow_list(context, channel, SELF_PLACEHOLDER, message, capacity) != 0) goto failed;
    if ((exported = memfd_create("seccomp-program", MFD_CLOEXEC)) < 0) {
        fail(message, capacity, "memfd_create: %s", strerror(errno));
        goto failed;
    }
    if ((rc = seccomp_export_bpf(context, exported)) != 0) {
        fail(message, capacity, "seccomp_export_bpf: %s", strerror(-rc));
        goto failed;
    }
    if (fstat(exported, &status) != 0 || status.st_size <= 0 || status.st_size % sizeof(struct sock_filter) != 0 ||
        status.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS) {
        fail(message, capacity, "seccomp_export_bpf: a program of %lld bytes", (long long)status.st_size);
        goto failed;
    }
    if ((filter->program = malloc((size_t)status.st_size)) == NULL ||
        pread(exported, filter->program, (size_t)status.st_size, 0) != status.st_size) {
        fail(message, capacity, "reading the seccomp program back failed");
        goto failed;
    }
    filter->length = (unsigned short)(status.st_size / sizeof(struct sock_filter));
    if (csandbox_filter_self_comparisons(filter) == 0) {
        fail(message, capacity, "the seccomp program compares with no pid");
        goto failed;
    }
    close(exported);
    seccomp_release(context);
    return filter;
failed:
    if (exported >= 0) close(exported);
    csandbox_filter_free(filter);
    seccomp_release(context);
    return NULL;
}

static int is_self_comparison(const struct sock_filter *instruction) {
    return instruction->code == (BPF_JMP | BPF_JEQ | BPF_K) && instruction->k == SELF_PLACEHOLDER;
}

int csandbox_filter_self_comparisons(const struct csandbox_filter *filter) {
    int count = 0;
    for (unsigned short i = 0; i < filter->length; i++) count += is_self_comparison(&filter->program[i]);
    return count;
}

void csandbox_filter_free(struct csandbox_filter *filter) {
    if (filter == NULL) return;
    free(filter->program);
    free(filter);
}

/// Loads `filter` with this process's pid in place of the placeholder, on every thread of the process (libvips'
/// pool may be running). no_new_privs is already set.
static int apply_seccomp(const struct csandbox_filter *filter, int *layers, char *message, size_t capacity) {
    size_t size = filter->length * sizeof(struct sock_filter);
    struct sock_filter *program = malloc(size);
    if (program == NULL) return fail(message, capacity, "seccomp program: out of memory");
    memcpy(program, filter->program, size);
    uint32_t self = (uint32_t)getpid();
    for (unsigned short i = 0; i < filter->length; i++)
        if (is_self_comparison(&program[i])) program[i].k = self;
    struct sock_fprog loaded = {.len = filter->length, .filter = program};
    long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &loaded);
    int saved = errno;
    free(program);
    // With TSYNC a positive result is a thread that could not take the filter.
    if (rc < 0) return fail(message, capacity, "seccomp: %s", strerror(saved));
    if (rc > 0) return fail(message, capacity, "seccomp: thread %ld could not take the filter", rc);
    *layers |= CSANDBOX_LAYER_SECCOMP;
    return 0;
}

int csandbox_lock_down(const struct csandbox_filter *filter, int *layers, char *message, size_t capacity) {
    *layers = 0;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        return fail(message, capacity, "PR_SET_DUMPABLE: %s", strerror(errno));
    if (drop_privileges(layers, message, capacity) != 0 || set_limits(message, capacity) != 0) return -1;
    // Landlock and seccomp both need no_new_privs without CAP_SYS_ADMIN (which is gone now).
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return fail(message, capacity, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
    if (apply_landlock(layers, message, capacity) != 0) return -1;
    return apply_seccomp(filter, layers, message, capacity);
}

int csandbox_protect_secrets(void) {
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return -errno;
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 ? 0 : -errno;
}
