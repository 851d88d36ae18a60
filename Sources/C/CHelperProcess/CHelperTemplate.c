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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

// Implemented in Swift (RenderHelpers, `RenderHelperServer+Template.swift`) and linked weakly: a binary without the
// render helpers gets a template whose helpers start themselves (they return from the constructor to `main`).
/// In the template: everything a helper needs before its lockdown, from the options after the subcommand. 0 when done.
extern int32_t chelper_template_warm_up(int32_t argc, char **argv) __attribute__((weak));
/// In a helper forked from a warm template: its lockdown and its one job. Returns its exit status.
extern int32_t chelper_forked_helper_main(void) __attribute__((weak));

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

/// In the template: forks a helper for `channel` and tells the worker its pid (or -errno). The helper is forked
/// twice over, so that it is orphaned at once and the kernel makes the worker (a child subreaper) its parent: the
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
static int serve_until_forked(void) {
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
    int channel = serve_until_forked();
    // The helper: its own channel where a helper finds it (the template's is replaced), a process group of its own
    // (as a spawned helper has), and its command line.
    if (dup2(channel, CHELPER_CHANNEL_FD) < 0) _exit(CHELPER_START_FAILED);
    close(channel);
    setpgid(0, 0);
    rename_to_helper(argc, argv);
    if (ready == CHELPER_TEMPLATE_WARM) _exit(chelper_forked_helper_main());
}
