// The helper template (docs/ARCHITECTURE.md §3, "Render helpers"): the process render helpers are forked from, so
// that a new helper skips the exec and the dynamic loader (most of a helper's start: the binary loads 134 libraries).
//
// The template is the worker's own binary started as `avatar-cropper render-helper-template OPTIONS` (the same
// spawn, environment and descriptors as a helper). It never reaches Swift's `main`: the constructor below runs once
// every library is loaded and relocated, before any Swift code, and serves fork requests on its channel in plain C
// with no thread of its own. Each forked helper returns from the constructor as `render-helper OPTIONS` and starts
// as a spawned one would (Swift's main, libvips, warm-up, lockdown). The template reads no job's bytes.
#define _GNU_SOURCE
#include "CHelperProcess.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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
    int channel = serve_until_forked();
    // The helper: its own channel where a helper finds it (the template's is replaced), a process group of its own
    // (as a spawned helper has), and its command line.
    if (dup2(channel, CHELPER_CHANNEL_FD) < 0) _exit(CHELPER_START_FAILED);
    close(channel);
    setpgid(0, 0);
    rename_to_helper(argc, argv);
}
