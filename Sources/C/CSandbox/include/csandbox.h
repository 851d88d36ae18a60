// The kernel-enforced lockdown of a render helper process, for the Sandbox module.
//
// A render helper parses bytes a stranger chose (libheif, libde265, dav1d, libjpeg-turbo, libvips'
// loaders, our own C). Once its libraries are loaded it calls `csandbox_lock_down`, after which the
// kernel refuses, whatever code runs in the process:
//   - network and IPC endpoints: socket, socketpair, connect, bind, listen, accept (EPERM): the
//     helper talks only over the channel it inherited;
//   - new programs: execve and execveat kill the process (SIGSYS): nothing legitimate in a decoder
//     execs, so an attempt is an exploit and the helper dies with it;
//   - new processes: fork, vfork and clone without CLONE_THREAD (EPERM); clone3, whose flags the
//     filter cannot read, answers ENOSYS, and glibc falls back to clone for threads;
//   - writing to the file system: open/openat/creat with a write, create, truncate or append flag
//     (EACCES), openat2 (ENOSYS, glibc falls back to openat), and every call that changes a name,
//     a link or a mode (unlink, rename, mkdir, link, symlink, chmod, chown, truncate...) (EPERM);
//   - raising its own limits: setrlimit, and prlimit64 with a new limit (EPERM), so the address-space cap
//     the worker sets on a helper for each job holds (reading a limit stays allowed);
//   - reaching other processes or the kernel's wider surface: ptrace, process_vm_readv/writev,
//     mount, umount2, pivot_root, chroot, unshare, setns, bpf, perf_event_open, keyctl, add_key,
//     request_key, userfaultfd, io_uring_*, kexec_*, init/finit/delete_module, personality (EPERM).
// Reading files (a lazily loaded plugin or profile), threads, memory, memfd_create, and read/write
// on descriptors already open stay allowed. The filter also sets no_new_privs, so no setuid program
// could regain rights, and the process is made non-dumpable with no core files (no image bytes in a
// core dump; no same-uid ptrace).
//
// A call on a non-native system-call ABI (x32, i386 on x86_64) kills the process, libseccomp's
// default for foreign architectures.
#pragma once
#include <stddef.h>

/// Installs the lockdown on the calling process (every thread, and it cannot be undone).
/// Returns 0, or -1 with a reason in `message` (at most `capacity` bytes, NUL-terminated).
int csandbox_lock_down(char *message, size_t capacity);
