#ifndef CHELPERPROCESS_H
#define CHELPERPROCESS_H

// The POSIX calls behind RenderHelpers' helper processes (docs/ARCHITECTURE.md §3, "Render helpers") that
// Swift's Glibc module does not expose: posix_spawn with closefrom, memfd_create, descriptors passed with
// SCM_RIGHTS, prlimit(RLIMIT_AS), and the helper's own exits when its worker is gone or an allocation fails. Every
// function that can fail returns 0 or a byte count on
// success and -errno on failure (errno is not read from Swift).

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The descriptor a helper finds its channel on.
#define CHELPER_CHANNEL_FD 3

/// The hidden subcommand a render helper runs (`avatar-cropper render-helper`).
#define CHELPER_SUBCOMMAND "render-helper"

/// The hidden subcommand of the helper template (CHelperTemplate.c): the process helpers are forked from. It takes
/// the helper's options and hands them to every helper it forks.
#define CHELPER_TEMPLATE_SUBCOMMAND "render-helper-template"

/// A template's first message (an int32) once it may be asked for helpers: it forks them warmed up (libraries
/// started, the warm-up rendered), or cold (each starts itself, as a spawned helper does). A negative value is the
/// -errno it failed with.
#define CHELPER_TEMPLATE_WARM 1
#define CHELPER_TEMPLATE_COLD 0

/// A fork request (one byte) for a helper that rehearses a job before it says `ready`; any other byte asks for one
/// that does not.
#define CHELPER_FORK_REHEARSED 1

/// Exit status of a helper that could not start, or of a template whose channel failed.
#define CHELPER_START_FAILED 70

/// The descriptor a helper finds its worker's decode cores on (a memory file), when it was given them.
#define CHELPER_CORES_FD 4

/// Starts `path` with `argv` (NULL-terminated) and `envp` (NULL-terminated; the helper's whole environment),
/// stdin/stdout/stderr on /dev/null, `channel` as descriptor CHELPER_CHANNEL_FD, `cores` (when not negative) as
/// CHELPER_CORES_FD and no other descriptor open (posix_spawn_file_actions_addclosefrom_np), in a process group
/// of its own. Sets *pid.
int chelper_spawn(const char *path, char *const argv[], char *const envp[], int channel, int cores, pid_t *pid);

/// A socket pair (SOCK_SEQPACKET, close-on-exec) into fds[0] (parent) and fds[1] (child).
int chelper_socketpair(int fds[2]);

/// An anonymous memory file (close-on-exec) that can be sealed (`chelper_seal`).
int chelper_memfd(const char *name);

/// Seals a memory file: CHELPER_SEAL_CONTENTS (no write, grow or shrink: the source photo a helper reads) or
/// CHELPER_SEAL_SIZE (no grow or shrink: the result file a helper writes into through a mapping), and no further
/// seal either way. Returns 0 or -errno.
int chelper_seal(int fd, int seals);
#define CHELPER_SEAL_CONTENTS 1
#define CHELPER_SEAL_SIZE 2

/// Sends one message of `length` bytes with up to `count` descriptors attached (SCM_RIGHTS).
ssize_t chelper_send(int socket, const void *bytes, size_t length, const int *fds, int count);

/// Receives one message into `bytes` (at most `capacity`) and up to `capacity_fds` descriptors into `fds`;
/// *received_fds is how many came. Returns the message's length, 0 when the peer is gone, or -EMSGSIZE when
/// the message or its descriptors were truncated (the descriptors that came are closed).
ssize_t chelper_receive(int socket, void *bytes, size_t capacity, int *fds, int capacity_fds, int *received_fds);

/// Waits up to `milliseconds` for `socket` to be readable or hung up: 1 ready, 0 not yet, -errno.
int chelper_wait_readable(int socket, int milliseconds);

/// Limits `pid`'s address space (RLIMIT_AS): the soft limit to `soft` (at most the hard limit), and when `hard` is
/// not 0 the hard limit to `hard` first. Without CAP_SYS_RESOURCE a hard limit can only be lowered, so the pool
/// sets it once per helper and moves the soft limit job by job.
int chelper_limit_address_space(pid_t pid, uint64_t soft, uint64_t hard);

/// Sets `pid`'s soft RLIMIT_CPU to `seconds` (0: no limit, up to the hard limit). Returns 0 or -errno.
int chelper_limit_cpu(pid_t pid, uint64_t seconds);

/// In a helper: starts a thread that ends the process with `_exit(status)` as soon as the other end of `socket`
/// is gone (the worker exited or was killed), even while the helper's main thread is stuck in a C call that
/// never returns. Returns 0 or -errno.
int chelper_exit_when_peer_gone(int socket, int status);

/// In a helper: an allocation that fails in C++ (`operator new`, libheif) ends the process with `_exit(status)`
/// instead of throwing `std::bad_alloc` into C code that may not catch it (an abort, indistinguishable from a
/// crash). The worker reads that status as the job running out of memory.
void chelper_exit_on_failed_new(int status);

/// In a helper, and in the template before its warm-up: no file may grow (RLIMIT_FSIZE 0, soft and hard; SIGXFSZ
/// ignored, so a write that would grow one fails with EFBIG instead of ending the process). liborc, which libvips
/// compiles SIMD code with, then keeps that code in private anonymous memory: it first tries a temporary file it
/// maps shared, twice, and a file that cannot grow fails that. A fork does not copy a shared mapping, so helpers
/// forked from one template would otherwise write into one another's code. Returns 0 or -errno.
int chelper_refuse_file_growth(void);

/// Makes the calling process a child subreaper (PR_SET_CHILD_SUBREAPER): helpers forked by its template become its
/// children when the template's middle process ends. Returns 0 or -errno.
int chelper_become_subreaper(void);

/// In a helper, between jobs: gives the heap's free pages back to the kernel (glibc's malloc_trim), so a helper
/// holds what its next job needs, not the most its largest job took. Returns 1 when memory was released.
int chelper_trim_heap(void);

/// Reaps this process's zombie children named `comm` (their /proc `comm`, the binary's name) whose pid is not one of
/// the `count` in `known`: what a subreaper adopts when a helper template dies in the middle of a fork (its middle
/// process, and the helper it forked, whose channel the worker never got). Only zombies are touched, so a child another
/// part of the process waits for is never taken while it runs. Returns how many were reaped.
int chelper_reap_orphans(const char *comm, const pid_t *known, int count);

/// Waits for `pid` to end. Sets *signal to the signal that killed it (0 if it exited) and *status to its exit
/// status.
int chelper_reap(pid_t pid, int *signal, int *status);

#ifdef __cplusplus
}
#endif

#endif
