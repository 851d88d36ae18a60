#define _GNU_SOURCE  // posix_spawn_file_actions_addclosefrom_np (glibc 2.34), memfd_create, prlimit
#include "CHelperProcess.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHELPER_MAX_FDS 4

/// `fd` where the child's file actions cannot overwrite it before it is moved into place: itself when it is
/// above every descriptor the helper gets (0–2, CHELPER_CHANNEL_FD, CHELPER_CORES_FD), else a close-on-exec copy
/// above them (*copy, which the caller closes). -1 when no copy can be made.
static int above_helper_fds(int fd, int *copy) {
    *copy = -1;
    if (fd < 0 || fd > CHELPER_CORES_FD) return fd;
    *copy = fcntl(fd, F_DUPFD_CLOEXEC, CHELPER_CORES_FD + 1);
    return *copy;
}

static int spawn_moved(const char *path, char *const argv[], char *const envp[], int channel, int cores,
                       pid_t *pid);

int chelper_spawn(const char *path, char *const argv[], char *const envp[], int channel, int cores, pid_t *pid) {
    // The actions below run in order: a source descriptor that is one of their targets (the channel on 4 and the
    // cores on 3, or either on 0–2 in a worker started without standard streams) would be overwritten first.
    int channel_copy, cores_copy;
    int moved_channel = above_helper_fds(channel, &channel_copy);
    int moved_cores = above_helper_fds(cores, &cores_copy);
    int result = moved_channel < 0 || (cores >= 0 && moved_cores < 0)
                     ? -errno
                     : spawn_moved(path, argv, envp, moved_channel, moved_cores, pid);
    if (channel_copy >= 0) close(channel_copy);
    if (cores_copy >= 0) close(cores_copy);
    return result;
}

static int spawn_moved(const char *path, char *const argv[], char *const envp[], int channel, int cores,
                       pid_t *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int result = posix_spawn_file_actions_init(&actions);
    if (result != 0) return -result;
    result = posix_spawnattr_init(&attributes);
    if (result != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return -result;
    }
    // Default signal dispositions and an empty mask in the helper, whatever the worker blocks or ignores;
    // a process group of its own, so a terminal's Ctrl-C reaches the worker, which ends its helpers.
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attributes, &all);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setflags(
        &attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
    if ((result = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)) != 0
        || (result = posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)) != 0
        || (result = posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)) != 0
        || (result = posix_spawn_file_actions_adddup2(&actions, channel, CHELPER_CHANNEL_FD)) != 0
        || (cores >= 0 && (result = posix_spawn_file_actions_adddup2(&actions, cores, CHELPER_CORES_FD)) != 0)
        || (result = posix_spawn_file_actions_addclosefrom_np(&actions, cores >= 0 ? CHELPER_CORES_FD + 1
                                                                                    : CHELPER_CHANNEL_FD + 1)) != 0) {
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attributes);
        return -result;
    }
    result = posix_spawn(pid, path, &actions, &attributes, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    return -result;
}

int chelper_socketpair(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) == 0 ? 0 : -errno;
}

int chelper_memfd(const char *name) {
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    return fd >= 0 ? fd : -errno;
}

int chelper_seal(int fd, int seals) {
    int flags = F_SEAL_SEAL | F_SEAL_GROW | F_SEAL_SHRINK;
    if (seals == CHELPER_SEAL_CONTENTS) flags |= F_SEAL_WRITE;
    else if (seals != CHELPER_SEAL_SIZE) return -EINVAL;
    return fcntl(fd, F_ADD_SEALS, flags) == 0 ? 0 : -errno;
}

ssize_t chelper_send(int socket, const void *bytes, size_t length, const int *fds, int count) {
    if (count < 0 || count > CHELPER_MAX_FDS) return -EINVAL;
    struct iovec vector = {.iov_base = (void *)bytes, .iov_len = length};
    union {
        char buffer[CMSG_SPACE(sizeof(int) * CHELPER_MAX_FDS)];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1};
    if (count > 0) {
        message.msg_control = control.buffer;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * count);
        memcpy(CMSG_DATA(header), fds, sizeof(int) * count);
    }
    ssize_t sent;
    do {
        sent = sendmsg(socket, &message, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    return sent >= 0 ? sent : -errno;
}

ssize_t chelper_receive(int socket, void *bytes, size_t capacity, int *fds, int capacity_fds, int *received_fds) {
    *received_fds = 0;
    struct iovec vector = {.iov_base = bytes, .iov_len = capacity};
    union {
        char buffer[CMSG_SPACE(sizeof(int) * CHELPER_MAX_FDS)];
        struct cmsghdr align;
    } control;
    struct msghdr message = {
        .msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.buffer, .msg_controllen = sizeof control.buffer};
    ssize_t received;
    do {
        received = recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    } while (received < 0 && errno == EINTR);
    if (received < 0) return -errno;
    int count = 0;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        int n = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
            if (count < capacity_fds) {
                fds[count++] = fd;
            } else {
                close(fd);
            }
        }
    }
    *received_fds = count;
    if (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        for (int i = 0; i < count; i++) close(fds[i]);
        *received_fds = 0;
        return -EMSGSIZE;
    }
    return received;
}

int chelper_wait_readable(int socket, int milliseconds) {
    struct pollfd entry = {.fd = socket, .events = POLLIN};
    int ready = poll(&entry, 1, milliseconds);
    if (ready < 0) return errno == EINTR ? 0 : -errno;
    return ready > 0 ? 1 : 0;
}

int chelper_limit_address_space(pid_t pid, uint64_t soft, uint64_t hard) {
    struct rlimit limit;
    if (prlimit(pid, RLIMIT_AS, NULL, &limit) != 0) return -errno;
    if (hard > 0 && (rlim_t)hard < limit.rlim_max) limit.rlim_max = (rlim_t)hard;
    limit.rlim_cur = (rlim_t)soft < limit.rlim_max ? (rlim_t)soft : limit.rlim_max;
    return prlimit(pid, RLIMIT_AS, &limit, NULL) == 0 ? 0 : -errno;
}

int chelper_limit_cpu(pid_t pid, uint64_t seconds) {
    struct rlimit limit;
    if (prlimit(pid, RLIMIT_CPU, NULL, &limit) != 0) return -errno;
    limit.rlim_cur = seconds == 0 || (rlim_t)seconds > limit.rlim_max ? limit.rlim_max : (rlim_t)seconds;
    return prlimit(pid, RLIMIT_CPU, &limit, NULL) == 0 ? 0 : -errno;
}

int chelper_reap_orphans(const char *comm, const pid_t *known, int count) {
    DIR *proc = opendir("/proc");
    if (proc == NULL) return 0;
    pid_t self = getpid();
    int reaped = 0;
    struct dirent *entry;
    while ((entry = readdir(proc)) != NULL) {
        char *end;
        long pid = strtol(entry->d_name, &end, 10);
        if (*end != '\0' || pid <= 0) continue;
        char path[64], line[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *file = fopen(path, "re");
        if (file == NULL) continue;
        size_t length = fread(line, 1, sizeof line - 1, file);
        fclose(file);
        line[length] = '\0';
        // "pid (comm) state ppid …": comm may hold spaces and parentheses, so it ends at the last ')'.
        char *open = strchr(line, '('), *close = strrchr(line, ')');
        if (open == NULL || close == NULL || close < open) continue;
        char state;
        long parent;
        if (sscanf(close + 1, " %c %ld", &state, &parent) != 2 || state != 'Z' || parent != self) continue;
        *close = '\0';
        if (strcmp(open + 1, comm) != 0) continue;
        int ours = 0;
        for (int i = 0; i < count; i++) ours |= known[i] == (pid_t)pid;
        if (!ours && waitpid((pid_t)pid, NULL, WNOHANG) == (pid_t)pid) reaped++;
    }
    closedir(proc);
    return reaped;
}

int chelper_reap(pid_t pid, int *signal, int *status) {
    int raw = 0;
    pid_t waited;
    do {
        waited = waitpid(pid, &raw, 0);
    } while (waited < 0 && errno == EINTR);
    if (waited < 0) return -errno;
    *signal = WIFSIGNALED(raw) ? WTERMSIG(raw) : 0;
    *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 0;
    return 0;
}

static void *exit_when_peer_gone(void *argument) {
    int socket = (int)((intptr_t)argument & 0xffffffff);
    int status = (int)((intptr_t)argument >> 32);
    for (;;) {
        // No events asked for: poll still reports the peer's hang-up (and errors), and consumes nothing.
        struct pollfd entry = {.fd = socket, .events = 0};
        if (poll(&entry, 1, -1) > 0 && (entry.revents & (POLLHUP | POLLERR | POLLNVAL))) _exit(status);
    }
    return NULL;
}

int chelper_exit_when_peer_gone(int socket, int status) {
    pthread_attr_t attributes;
    int result = pthread_attr_init(&attributes);
    if (result != 0) return -result;
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    // The default stack size: glibc puts every loaded library's static TLS on each thread's stack, and with OpenCV
    // linked in (the face detector) that outgrew a small fixed size. Only the pages the thread touches are resident.
    pthread_t thread;
    intptr_t argument = ((intptr_t)status << 32) | (intptr_t)(unsigned)socket;
    result = pthread_create(&thread, &attributes, exit_when_peer_gone, (void *)argument);
    pthread_attr_destroy(&attributes);
    return -result;
}

int chelper_trim_heap(void) {
#if defined(__GLIBC__)
    return malloc_trim(0);
#else
    return 0;
#endif
}

int chelper_refuse_file_growth(void) {
    if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR) return -errno;
    const struct rlimit none = {0, 0};
    return setrlimit(RLIMIT_FSIZE, &none) == 0 ? 0 : -errno;
}
