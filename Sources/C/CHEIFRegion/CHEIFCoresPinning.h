// A codec's own threads under the decode cores (CHEIFCores.c; docs/ARCHITECTURE.md §3, "Decode cores"). Private
// to CHEIFRegion.
#ifndef CHEIF_CORES_PINNING_H
#define CHEIF_CORES_PINNING_H

#include "CHEIFRegion.h"

/// Runs `body(context)` on the calling thread with its CPU affinity narrowed to the CPU of the core its render holds
/// and, when one is free, the CPU of an extra core taken for the call; then restores the affinity and gives the extra
/// core back. A codec that sizes its thread pool from the affinity (dav1d: one decoding thread per CPU, and with more
/// than one a second frame context and a coefficient buffer of 3 bytes a pixel, 6 above 8 bits) starts threads only
/// for the cores it was given, and the threads it starts stay on them. Runs `body` unpinned when `cores` is NULL,
/// the thread holds no core, or the affinity cannot be read or set. Returns the CPUs pinned to (0: unpinned).
int cheif_cores_run_pinned(cheif_cores *cores, void (*body)(void *), void *context);

#endif
