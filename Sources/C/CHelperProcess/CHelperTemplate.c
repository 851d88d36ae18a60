// The helper template (docs/ARCHITECTURE.md §3, "Render helpers"): the process render helpers are forked from, so
// that a new helper skips the exec, the dynamic loader (the binary loads 134 libraries) and every library's start.
//
// The template is the worker's own binary started as `avatar-cropper render-helper-template OPTIONS` (the same
// spawn, environment and descriptors as a helper). It never reaches Swift's `main`: the constructor below runs once
// every library is loaded and relocated. It warms up as a helper would before its lockdown (libvips, the face model,
// libheif's plugins, a render in every format: `chelper_template_warm_up`, in Swift), waits until its libvips
// workers have left (a fork copies only the calling thread, so it forks only while it has one), tells the worker it
// is ready, and then serves fork requests in plain C. Each forked helper starts from that warm state: it locks
// itself down and serves its one job (`chelper_forked_helper_main`), and never returns from the constructor. The
// template reads no job's bytes.
#define _GNU_SOURCE
#include "CHelperProcess.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

// Implemented in Swift (RenderHelpers, `RenderHelperServer+Template.swift`) and linked weakly: a binary without the
// render helpers gets a template whose helpers start themselves (they return from the constructor to `main`).
/// In the template: everything a helper needs before its lockdown, from the options after the subcommand. 0 when done.
extern int32_t chelper_template_warm_up(int32_t argc, char **argv) __attribute__((weak));
/// In a helper forked from a warm template: its lockdown, a rehearsal when `rehearse` is non-zero, and its one job.
/// Returns its exit status.
extern int32_t chelper_forked_helper_main(int32_t rehearse) __attribute__((weak));

/// How long a warm template waits for its libvips workers to leave before it gives up (libvips ends an idle worker
/// after 15 s).
#define CHELPER_QUIET_TIMEOUT_MS 60000

int chelper_become_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 ? 0 : -errno;
}

/// In the new helper: its command line reads `render-helper OPTIONS`, in the parser's argv and in what `ps` shows
/// (the argument strings are rewritten in place: the new subcommand is shorter; the bytes freed at the end are NULs).
static void rename_to_helper(int argc, char **argv) {
    static const char helper[] = CHELPER_SUBCOMMAND;
    char *end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
    for (int i = 1; i < argc; i++) {
        if (argv[i] != argv[i - 1] + strlen(argv[i - 1]) + 1) {  // not one block: only the parser's view changes
            argv[1] = (char *)helper;
            return;
        }
    }
    size_t shrink = strlen(argv[1]) - strlen(helper);
    char *rest = argv[1] + strlen(argv[1]) + 1;
    memcpy(argv[1], helper, sizeof helper);
    memmove(argv[1] + sizeof helper, rest, (size_t)(end - rest));
    memset(end - shrink, 0, shrink);
    for (int i = 2; i < argc; i++) argv[i] -= shrink;
}

/// In a cold template (whose helpers go on to `main`, so each keeps the template's own stack): forks a helper for
/// `channel` and tells the worker its pid (or -errno). The helper is forked twice over, so that it is orphaned at once and the kernel makes the worker (a child subreaper) its parent: the
/// worker reaps it, reads how it died and limits it as it does a spawned helper. The template waits for the middle
/// process to end before it answers, so the helper is the worker's child when the worker gets its pid.
/// Returns 0 in the template; in the helper, 1.
static int fork_helper(int channel) {
    int pipe_fds[2];
    int32_t answer;
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
        answer = -errno;
    } else {
        pid_t middle = fork();
        if (middle == 0) {
            pid_t helper = fork();
            if (helper == 0) {
                close(pipe_fds[0]);
                close(pipe_fds[1]);
                return 1;
            }
            int32_t told = helper > 0 ? helper : -errno;
            _exit(write(pipe_fds[1], &told, sizeof told) == (ssize_t)sizeof told ? 0 : 1);
        }
        close(pipe_fds[1]);
        answer = middle < 0 ? -errno : -EIO;
        if (middle > 0) {
            ssize_t got;
            do {
                got = read(pipe_fds[0], &answer, sizeof answer);
            } while (got < 0 && errno == EINTR);
            if (got != (ssize_t)sizeof answer) answer = -EIO;
            while (waitpid(middle, NULL, 0) < 0 && errno == EINTR) {
            }
        }
        close(pipe_fds[0]);
    }
    if (chelper_send(CHELPER_CHANNEL_FD, &answer, sizeof answer, NULL, 0) < 0) _exit(0);
    return 0;
}

/// The main stack of a helper forked warm (`fork_warm_helper`), as large as a main thread's stack may grow by
/// default (`RLIMIT_STACK`), with an inaccessible gap below it as wide as the kernel keeps below a growing stack
/// (`stack_guard_gap`, 256 pages), so a frame larger than a page cannot step over it into another mapping.
#define CHELPER_HELPER_STACK_BYTES (8u << 20)
#define CHELPER_GUARD_BYTES (1u << 20)

/// The template's command line, which each helper renames (`rename_to_helper`).
static int template_argc;
static char **template_argv;
/// The middle process's stack, mapped once: the middle and then each helper forked from it run on it.
static char *helper_stack;

/// In a new helper, warm or cold: its channel where a helper finds it (the template's is replaced), a process group
/// of its own (as a spawned helper has), and its command line.
static void become_helper(int channel) {
    if (dup2(channel, CHELPER_CHANNEL_FD) < 0) _exit(CHELPER_START_FAILED);
    close(channel);
    setpgid(0, 0);
    rename_to_helper(template_argc, template_argv);
}

/// In a helper forked warm: `become_helper`, then its life (`chelper_forked_helper_main`). Never returns.
static _Noreturn void run_forked_helper(int channel, int rehearse) {
    become_helper(channel);
    _exit(chelper_forked_helper_main(rehearse));
}

/// What the middle process of a warm fork reports, in the memory it shares with the template.
struct middle_report {
    int channel;
    int rehearse;
    pid_t helper;
    int error;
};

/// The middle process: it shares the template's memory and runs while the template waits (`CLONE_VM |
/// CLONE_VFORK`), forks the helper (the one copy of the template's address space a helper costs) and ends, which
/// orphans the helper at once.
static int middle_main(void *argument) {
    struct middle_report *report = argument;
    pid_t helper = fork();
    if (helper == 0) run_forked_helper(report->channel, report->rehearse);
    report->error = helper < 0 ? errno : 0;
    report->helper = helper;
    return 0;
}

/// In a warm template: forks a helper for `channel` (rehearsed when `rehearse` is non-zero) and returns its pid (or
/// -errno); the helper never returns here.
/// As `fork_helper`, the helper is orphaned at once so that the worker (a child subreaper) becomes its parent, but
/// the process in the middle shares the template's memory instead of copying it: a helper costs one copy of the
/// template's page tables and one teardown, not two of each (bench/RESULTS.md, "Where the added cost goes"). The
/// middle runs on a stack of its own, which the helper keeps as its main stack. The template waits until the middle
/// is gone, so the helper is the worker's child when the worker gets its pid.
static int32_t fork_warm_helper(int channel, int rehearse) {
    if (helper_stack == NULL) {
        void *mapped = mmap(NULL, CHELPER_GUARD_BYTES + CHELPER_HELPER_STACK_BYTES, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
        if (mapped == MAP_FAILED) return -errno;
        if (mprotect(mapped, CHELPER_GUARD_BYTES, PROT_NONE) != 0) {
            int error = errno;
            munmap(mapped, CHELPER_GUARD_BYTES + CHELPER_HELPER_STACK_BYTES);
            return -error;
        }
        helper_stack = mapped;
    }
    struct middle_report report = {.channel = channel, .rehearse = rehearse, .helper = -1, .error = EIO};
    pid_t middle = clone(middle_main, helper_stack + CHELPER_GUARD_BYTES + CHELPER_HELPER_STACK_BYTES,
                         CLONE_VM | CLONE_VFORK | SIGCHLD, &report);
    if (middle < 0) return -errno;
    while (waitpid(middle, NULL, 0) < 0 && errno == EINTR) {
    }
    return report.helper > 0 ? report.helper : -(report.error != 0 ? report.error : EIO);
}

/// The number of threads this process has (/proc/self/status), or -1.
static int thread_count(void) {
    FILE *status = fopen("/proc/self/status", "re");
    if (status == NULL) return -1;
    char line[256];
    int threads = -1;
    while (fgets(line, sizeof line, status) != NULL) {
        if (strncmp(line, "Threads:", 8) == 0) {
            threads = atoi(line + 8);
            break;
        }
    }
    fclose(status);
    return threads;
}

/// Waits until the calling thread is this process's only one. Returns 0, or -ETIMEDOUT.
static int wait_single_threaded(int timeout_ms) {
    const struct timespec pause = {.tv_sec = 0, .tv_nsec = 100 * 1000 * 1000};
    for (int waited = 0; thread_count() != 1; waited += 100) {
        if (waited >= timeout_ms) return -ETIMEDOUT;
        nanosleep(&pause, NULL);
    }
    return 0;
}

/// Serves fork requests until one returns in a new helper (its channel's descriptor) or the worker is gone (exit).
/// A request is one byte, CHELPER_FORK_REHEARSED for a helper that rehearses a job before it says `ready` (only a
/// warm template's helpers can), anything else for one that does not, with the new helper's channel attached. A warm
/// template's helpers never return here (`fork_warm_helper`).
static int serve_until_forked(int warm) {
    for (;;) {
        char request;
        int channel = -1, count = 0;
        ssize_t got = chelper_receive(CHELPER_CHANNEL_FD, &request, sizeof request, &channel, 1, &count);
        if (got <= 0) _exit(got == 0 ? 0 : CHELPER_START_FAILED);
        if (count != 1) {
            int32_t refused = -EINVAL;
            if (chelper_send(CHELPER_CHANNEL_FD, &refused, sizeof refused, NULL, 0) < 0) _exit(0);
            continue;
        }
        if (warm) {
            int32_t answer = fork_warm_helper(channel, request == CHELPER_FORK_REHEARSED);
            close(channel);
            if (chelper_send(CHELPER_CHANNEL_FD, &answer, sizeof answer, NULL, 0) < 0) _exit(0);
            continue;
        }
        if (fork_helper(channel)) return channel;
        close(channel);
    }
}

__attribute__((constructor)) static void chelper_template(int argc, char **argv, char **envp) {
    (void)envp;
    if (argc < 2 || strcmp(argv[1], CHELPER_TEMPLATE_SUBCOMMAND) != 0) return;
    // Warm when this binary links the helpers: its helpers then start from here. The answer tells the worker
    // the template may now be asked for helpers (CHELPER_TEMPLATE_WARM or _COLD), or why it cannot (-errno).
    int32_t ready = CHELPER_TEMPLATE_COLD;
    if (chelper_template_warm_up != NULL && chelper_forked_helper_main != NULL) {
        ready = chelper_template_warm_up(argc - 2, argv + 2) == 0 ? wait_single_threaded(CHELPER_QUIET_TIMEOUT_MS)
                                                                   : -EINVAL;
        if (ready == 0) ready = CHELPER_TEMPLATE_WARM;
    }
    if (chelper_send(CHELPER_CHANNEL_FD, &ready, sizeof ready, NULL, 0) < 0 || ready < 0) _exit(CHELPER_START_FAILED);
    template_argc = argc;
    template_argv = argv;
    // A cold template's helper returns here, and goes on to `main`, which starts it.
    become_helper(serve_until_forked(ready == CHELPER_TEMPLATE_WARM));
}
