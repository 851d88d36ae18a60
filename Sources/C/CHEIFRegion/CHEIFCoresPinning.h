// A codec's own threads under the decode cores (CHEIFCores.c; docs/ARCHITECTURE.md §3, "Decode cores"). Private
// to CHEIFRegion.
#ifndef CHEIF_CORES_PINNING_H
#define CHEIF_CORES_PINNING_H

// cpu_set_t: the including file defines _GNU_SOURCE before its first include.
#include <sched.h>

#include "CHEIFRegion.h"

/// What `cheif_cores_pin` changed, for `cheif_cores_unpin` to undo.
typedef struct {
    cpu_set_t saved;
    int extra;
    int cpus;
} cheif_pinning;

/// Narrows the calling thread's CPU affinity to the CPU of the core its render holds and, when one is free, the CPU
/// of an extra core taken for it; `cheif_cores_unpin` restores the affinity and gives the extra core back. A codec
/// that sizes its thread pool from the affinity (dav1d: one decoding thread per CPU, and with more than one a second
/// frame context and a coefficient buffer of 3 bytes a pixel, 6 above 8 bits) then starts threads only for the
/// cores it was given, and the threads it starts stay on them. Leaves the thread as it is when `cores` is NULL, the
/// thread holds no core, or the affinity cannot be read or set. Returns the CPUs pinned to (0: unpinned).
int cheif_cores_pin(cheif_cores *cores, cheif_pinning *pinning);

void cheif_cores_unpin(cheif_cores *cores, const cheif_pinning *pinning);

#endif
