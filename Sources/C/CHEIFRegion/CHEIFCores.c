// The decode cores the HEIF region decoder's extra tile threads take (CHEIFRegion.h, "Decode cores";
// docs/ARCHITECTURE.md §3, "Render helpers").
//
// One core is one byte of a memory file, taken with a POSIX record lock (fcntl F_SETLK). Every helper of a
// worker holds the same file, so the kernel arbitrates between them, and it releases a process's locks
// when the process ends: a helper killed mid-tile (its deadline, a crash) leaks no core. Record locks
// belong to the process, not the thread, so a process also keeps its own table of the cores its threads
// hold. The byte after the cores is the doorbell: a render waiting for a core holds a shared lock on it,
// and an extra thread takes no further tile while any process (or a render of its own) waits.
#define _GNU_SOURCE
#include "CHEIFRegion.h"
#include "CHEIFCoresPinning.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct cheif_cores {
    int descriptor;
    int count;
    /// The CPUs the process may run on when its cores were opened (`cpu_count` 0: unknown, nothing pinned).
    cpu_set_t cpus;
    int cpu_count;
    pthread_mutex_t mutex;
    /// Renders of this process waiting for a core (the doorbell is held while nonzero).
    int waiting;
    /// Which cores this process's threads hold.
    unsigned char held[];
};

int cheif_cores_create(void) {
    int descriptor = memfd_create("avatar-decode-cores", MFD_CLOEXEC);
    return descriptor < 0 ? -errno : descriptor;
}

cheif_cores *cheif_cores_open(int descriptor, int count) {
    // A descriptor that is not open would make every lock fail: every render would wait for a core in vain.
    if (descriptor < 0 || count < 1 || fcntl(descriptor, F_GETFD) < 0) {
        return NULL;
    }
    cheif_cores *cores = calloc(1, sizeof(cheif_cores) + (size_t)count);
    if (cores == NULL) {
        return NULL;
    }
    cores->descriptor = descriptor;
    cores->count = count;
    if (sched_getaffinity(0, sizeof(cores->cpus), &cores->cpus) == 0) {
        cores->cpu_count = CPU_COUNT(&cores->cpus);
    }
    pthread_mutex_init(&cores->mutex, NULL);
    return cores;
}

static int lock_byte(int descriptor, int byte, short type) {
    struct flock lock = {.l_type = type, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1};
    return fcntl(descriptor, F_SETLK, &lock) == 0;
}

/// Whether another process holds the doorbell (a record lock the caller's own process holds is never
/// reported to it: its own waiters are `waiting`).
static int rung_elsewhere(const cheif_cores *cores) {
    struct flock lock = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = cores->count, .l_len = 1};
    if (fcntl(cores->descriptor, F_GETLK, &lock) != 0) {
        return 1; // cannot tell: take no extra core
    }
    return lock.l_type != F_UNLCK;
}

/// With the mutex held: the first core no thread of any process holds, or -1.
static int take_free(cheif_cores *cores) {
    for (int core = 0; core < cores->count; core++) {
        if (!cores->held[core] && lock_byte(cores->descriptor, core, F_WRLCK)) {
            cores->held[core] = 1;
            return core;
        }
    }
    return -1;
}

int cheif_cores_take_extra(cheif_cores *cores) {
    pthread_mutex_lock(&cores->mutex);
    int core = cores->waiting == 0 && !rung_elsewhere(cores) ? take_free(cores) : -1;
    pthread_mutex_unlock(&cores->mutex);
    return core;
}

static void ring(cheif_cores *cores, int on) {
    // Called with the mutex held; the doorbell is one shared lock per process.
    if (on) {
        if (cores->waiting++ == 0) {
            lock_byte(cores->descriptor, cores->count, F_RDLCK);
        }
    } else if (--cores->waiting == 0) {
        lock_byte(cores->descriptor, cores->count, F_UNLCK);
    }
}

/// The core the calling thread's render holds (`cheif_cores_take`), -1 when none.
static _Thread_local int render_core = -1;

static int take_waiting(cheif_cores *cores, int wait_milliseconds);

int cheif_cores_take(cheif_cores *cores, int wait_milliseconds) {
    const int core = take_waiting(cores, wait_milliseconds);
    if (core >= 0) {
        render_core = core;
    }
    return core;
}

static int take_waiting(cheif_cores *cores, int wait_milliseconds) {
    pthread_mutex_lock(&cores->mutex);
    int core = take_free(cores);
    if (core >= 0 || wait_milliseconds <= 0) {
        pthread_mutex_unlock(&cores->mutex);
        return core;
    }
    ring(cores, 1);
    pthread_mutex_unlock(&cores->mutex);
    // Extra threads give their core back after the tile they decode and take no other while the doorbell
    // rings, so a core frees within one tile's decode unless renders hold them all.
    const struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};
    for (int waited = 0; core < 0 && waited < wait_milliseconds; waited++) {
        nanosleep(&pause, NULL);
        pthread_mutex_lock(&cores->mutex);
        core = take_free(cores);
        pthread_mutex_unlock(&cores->mutex);
    }
    pthread_mutex_lock(&cores->mutex);
    ring(cores, 0);
    pthread_mutex_unlock(&cores->mutex);
    return core;
}

void cheif_cores_give(cheif_cores *cores, int core) {
    if (core < 0 || core >= cores->count) {
        return;
    }
    if (core == render_core) {
        render_core = -1;
    }
    pthread_mutex_lock(&cores->mutex);
    if (cores->held[core]) {
        lock_byte(cores->descriptor, core, F_UNLCK);
        cores->held[core] = 0;
    }
    pthread_mutex_unlock(&cores->mutex);
}

void cheif_cores_close(cheif_cores *cores) {
    if (cores == NULL) {
        return;
    }
    for (int core = 0; core < cores->count; core++) {
        cheif_cores_give(cores, core);
    }
    pthread_mutex_destroy(&cores->mutex);
    free(cores);
}

/// The CPU that stands for `core`: the process's CPUs in order, again from the first when there are more cores.
static int cpu_of(const cheif_cores *cores, int core) {
    int left = core % cores->cpu_count;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &cores->cpus) && left-- == 0) {
            return cpu;
        }
    }
    return -1;
}

int cheif_cores_pin(cheif_cores *cores, cheif_pinning *pinning) {
    pinning->extra = -1;
    pinning->cpus = 0;
    const int own = render_core;
    if (cores == NULL || own < 0 || cores->cpu_count < 1 ||
        sched_getaffinity(0, sizeof(pinning->saved), &pinning->saved) != 0) {
        return 0;
    }
    pinning->extra = cheif_cores_take_extra(cores);
    cpu_set_t set;
    CPU_ZERO(&set);
    const int cpus[] = {cpu_of(cores, own), pinning->extra >= 0 ? cpu_of(cores, pinning->extra) : -1};
    for (int i = 0; i < 2; i++) {
        if (cpus[i] >= 0) {
            CPU_SET(cpus[i], &set);
        }
    }
    // pid 0: the calling thread, the only one a locked-down helper may pin (docs/SECURITY.md).
    if (CPU_COUNT(&set) > 0 && sched_setaffinity(0, sizeof(set), &set) == 0) {
        pinning->cpus = CPU_COUNT(&set);
    }
    return pinning->cpus;
}

void cheif_cores_unpin(cheif_cores *cores, const cheif_pinning *pinning) {
    if (pinning->cpus > 0) {
        sched_setaffinity(0, sizeof(pinning->saved), &pinning->saved);
    }
    if (cores != NULL) {
        cheif_cores_give(cores, pinning->extra);
    }
}
