// The kernel-enforced lockdown of a render helper process, for the Sandbox module.
//
// What a locked-down helper can and cannot do — the threat model these layers answer — is stated once, in
// docs/SECURITY.md ("What a render helper may do"). In short: a helper parses bytes a stranger chose (libheif,
// libde265, dav1d, libjpeg-turbo, libwebp, libvips' loaders, our own C), so every layer assumes its code has been
// taken over. Once its libraries are loaded and warmed up, `csandbox_lock_down` puts on, in this order:
//   1. no core file, non-dumpable (no same-uid ptrace, no /proc/<helper>/mem for another process of its uid);
//   2. privileges dropped: supplementary groups, every capability (bounding, ambient, effective, permitted,
//      inheritable) and, when it runs as root holding CAP_SYS_RESOURCE (which its worker needs to keep limiting it
//      across uids), uid and gid CSANDBOX_UNPRIVILEGED_ID;
//   3. limits: RLIMIT_FSIZE 0 (no file grows or is written with write(2): the result goes through a shared mapping),
//      RLIMIT_NOFILE just above the descriptors it holds plus a job's two memory files, RLIMIT_MEMLOCK and
//      RLIMIT_MSGQUEUE 0;
//   4. Landlock, where the kernel offers it: a ruleset that handles every file-system right of the kernel's ABI and
//      grants none (no file can be opened, read, written or executed by path), no TCP bind or connect (ABI ≥ 4), and
//      no signal or abstract Unix socket outside its own domain (ABI ≥ 6);
//   5. a seccomp-bpf allow-list (csandbox.c lists it): every system call not on it kills the process (SIGSYS),
//      a few that libraries probe answer an errno instead, and the allowed ones are filtered by argument where an
//      argument could reach beyond the process (signals only to itself, sendmsg/recvmsg only on its channel, fcntl
//      commands, prctl options, clone only for threads, prlimit64 only to read its own limits). No open, openat,
//      stat or access of a path is allowed at all.
#pragma once
#include <stddef.h>

/// A compiled seccomp allow-list (`csandbox_filter_prepare`).
struct csandbox_filter;

/// The uid and gid a helper started as root moves to (Debian's `nogroup`/`nobody`).
#define CSANDBOX_UNPRIVILEGED_ID 65534

/// Bits of `csandbox_lock_down`'s `layers`: which layers the kernel allowed.
enum {
    /// The seccomp allow-list (always, or the lockdown fails).
    CSANDBOX_LAYER_SECCOMP = 1 << 0,
    /// Landlock's file-system ruleset with no rights.
    CSANDBOX_LAYER_LANDLOCK_FS = 1 << 1,
    /// Landlock's network rules (ABI ≥ 4): no TCP bind or connect.
    CSANDBOX_LAYER_LANDLOCK_NET = 1 << 2,
    /// Landlock's scoping (ABI ≥ 6): no signal, no abstract Unix socket outside the helper.
    CSANDBOX_LAYER_LANDLOCK_SCOPE = 1 << 3,
    /// It ran as root and moved to CSANDBOX_UNPRIVILEGED_ID.
    CSANDBOX_LAYER_UID_DROPPED = 1 << 4,
};

/// The seccomp allow-list compiled for `channel` (the only descriptor sendmsg and recvmsg may use afterwards), for
/// any process: its comparisons with the process's own pid are filled in by the process that loads it. A template
/// compiles it once before it forks, and each helper loads it (compiling costs about 0.5 ms, a helper per job).
/// NULL with a reason in `message` (at most `capacity` bytes, NUL-terminated) when libseccomp fails.
struct csandbox_filter *csandbox_filter_prepare(int channel, char *message, size_t capacity);

/// How many comparisons with the process's own pid `filter` holds (the lockdown fills each in).
int csandbox_filter_self_comparisons(const struct csandbox_filter *filter);

void csandbox_filter_free(struct csandbox_filter *filter);

/// Installs the lockdown on the calling process (every thread, and it cannot be undone), its seccomp layer
/// `filter`. Sets *layers (CSANDBOX_LAYER_*) and returns 0, or returns -1 with a reason in `message` (at most
/// `capacity` bytes, NUL-terminated).
int csandbox_lock_down(const struct csandbox_filter *filter, int *layers, char *message, size_t capacity);

/// The Landlock ABI the kernel offers (0: none, or disabled).
int csandbox_landlock_abi(void);

/// For the worker, once configured: no core file and non-dumpable, so a process of its uid (a helper taken over by
/// an upload, before or despite its lockdown) can neither ptrace it nor open its /proc entries (environ, mem, fd/,
/// maps: the kernel makes them root's). Returns 0 or -errno.
int csandbox_protect_secrets(void);
