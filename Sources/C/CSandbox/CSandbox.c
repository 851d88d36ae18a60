// The render helper's lockdown: see csandbox.h for what it refuses and why.
#define _GNU_SOURCE
#include "csandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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

// Every call in `names` answers `action` whatever its arguments.
static int add_all(scmp_filter_ctx filter, uint32_t action, const char *const *names, size_t count,
                   char *message, size_t capacity) {
    for (size_t i = 0; i < count; i++) {
        int number = seccomp_syscall_resolve_name(names[i]);
        if (number == __NR_SCMP_ERROR) continue;  // not a call of this architecture
        int rc = seccomp_rule_add(filter, action, number, 0);
        if (rc != 0) return fail(message, capacity, "seccomp rule for %s: %s", names[i], strerror(-rc));
    }
    return 0;
}

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static const char *const refused_network[] = {
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
};

static const char *const refused_processes[] = {
    "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise",
    "tkill", "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "kcmp",
};

static const char *const refused_file_changes[] = {
    "creat", "unlink", "unlinkat", "rename", "renameat", "renameat2", "mkdir", "mkdirat", "rmdir",
    "link", "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "chown", "fchown",
    "lchown", "fchownat", "truncate", "mknod", "mknodat", "utime", "utimes", "utimensat", "futimesat",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    "open_by_handle_at", "name_to_handle_at", "fanotify_init", "inotify_init", "inotify_init1",
};

static const char *const refused_kernel[] = {
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "bpf", "perf_event_open",
    "keyctl", "add_key", "request_key", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module", "personality", "acct", "swapon", "swapoff", "reboot", "sethostname",
    "setdomainname", "iopl", "ioperm", "quotactl", "lookup_dcookie", "move_pages", "migrate_pages",
    "fsopen", "fsmount", "fsconfig", "fspick", "open_tree", "move_mount", "mount_setattr",
};

static const char *const refused_as_unknown[] = {
    "clone3",  // its flags sit behind a pointer; glibc falls back to clone, whose flags are checked
    "openat2", // its flags sit behind a pointer; glibc falls back to openat
};

// open(path, flags) / openat(dir, path, flags) with any flag that writes, creates or truncates.
static int refuse_writing_opens(scmp_filter_ctx filter, char *message, size_t capacity) {
    const unsigned int writing[] = {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND};
    for (size_t i = 0; i < COUNT(writing); i++) {
        int rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 1,
                                  SCMP_A1(SCMP_CMP_MASKED_EQ, writing[i], writing[i]));
        if (rc == 0)
            rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 1,
                                  SCMP_A2(SCMP_CMP_MASKED_EQ, writing[i], writing[i]));
        if (rc != 0) return fail(message, capacity, "seccomp rule for open: %s", strerror(-rc));
    }
    return 0;
}

// Signals go to this process only: a helper cannot stop its worker or any other process of its uid.
static int refuse_foreign_signals(scmp_filter_ctx filter, char *message, size_t capacity) {
    scmp_datum_t self = (scmp_datum_t)getpid();
    const int calls[] = {SCMP_SYS(kill), SCMP_SYS(tgkill), SCMP_SYS(rt_sigqueueinfo),
                         SCMP_SYS(rt_tgsigqueueinfo)};
    for (size_t i = 0; i < COUNT(calls); i++) {
        int rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), calls[i], 1, SCMP_A0(SCMP_CMP_NE, self));
        if (rc != 0) return fail(message, capacity, "seccomp rule for signals: %s", strerror(-rc));
    }
    return 0;
}

int csandbox_lock_down(char *message, size_t capacity) {
    struct rlimit no_core = {0, 0};
    if (setrlimit(RLIMIT_CORE, &no_core) != 0) return fail(message, capacity, "RLIMIT_CORE: %s", strerror(errno));
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        return fail(message, capacity, "PR_SET_DUMPABLE: %s", strerror(errno));

    scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
    if (filter == NULL) return fail(message, capacity, "seccomp_init failed");
    int status = 0;
    int rc;
    // Every thread of the process (libvips' pool may be running), and no_new_privs with it.
    if ((rc = seccomp_attr_set(filter, SCMP_FLTATR_CTL_TSYNC, 1)) != 0 ||
        (rc = seccomp_attr_set(filter, SCMP_FLTATR_CTL_NNP, 1)) != 0) {
        status = fail(message, capacity, "seccomp attributes: %s", strerror(-rc));
        goto done;
    }
    if (add_all(filter, SCMP_ACT_ERRNO(EPERM), refused_network, COUNT(refused_network), message, capacity) != 0 ||
        add_all(filter, SCMP_ACT_ERRNO(EPERM), refused_processes, COUNT(refused_processes), message, capacity) != 0 ||
        add_all(filter, SCMP_ACT_ERRNO(EPERM), refused_file_changes, COUNT(refused_file_changes), message,
                capacity) != 0 ||
        add_all(filter, SCMP_ACT_ERRNO(EPERM), refused_kernel, COUNT(refused_kernel), message, capacity) != 0 ||
        add_all(filter, SCMP_ACT_ERRNO(ENOSYS), refused_as_unknown, COUNT(refused_as_unknown), message,
                capacity) != 0) {
        status = -1;
        goto done;
    }
    static const char *const exec[] = {"execve", "execveat"};
    if (add_all(filter, SCMP_ACT_KILL_PROCESS, exec, COUNT(exec), message, capacity) != 0) {
        status = -1;
        goto done;
    }
    // A new thread shares the process (CLONE_THREAD); anything else would be a new process.
    rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
    if (rc != 0) {
        status = fail(message, capacity, "seccomp rule for clone: %s", strerror(-rc));
        goto done;
    }
    // Limits stay as the worker set them: prlimit64 may read (no new limit), never set; setrlimit is refused.
    rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setrlimit), 0);
    if (rc == 0)
        rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64), 1, SCMP_A2(SCMP_CMP_NE, 0));
    if (rc != 0) {
        status = fail(message, capacity, "seccomp rule for limits: %s", strerror(-rc));
        goto done;
    }
    if (refuse_writing_opens(filter, message, capacity) != 0 || refuse_foreign_signals(filter, message, capacity) != 0) {
        status = -1;
        goto done;
    }
    rc = seccomp_load(filter);
    if (rc != 0) status = fail(message, capacity, "seccomp_load: %s", strerror(-rc));
done:
    seccomp_release(filter);
    return status;
}
