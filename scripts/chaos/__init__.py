"""`make chaos`: the real stack under faults, with the worker's promises checked at the end.

Two worker processes of one consumer group take a few thousand crop requests from a Python
producer: ordinary photos, hostile files (truncated, zero-byte, HTML, a header-only bomb, a
truncated SVGZ, an oversized object, a missing one, the repo's hostile fixtures), duplicates,
requests of one user sent out of order and under different keys, malformed messages, and uploads
that crash (SIGSEGV, SIGKILL, abort), hang or exhaust the memory of the render helper that decodes
them (the test-only markers act inside the helper): each must fail only its own job, on its first
render, with its code, and no worker may die of one. Beside them go mutations of real photos (byte
flips, box sizes and lengths overwritten, truncations: an iPhone HEIC, a JPEG, the corpus' iOS 18
HEIC when present) and the fuzz harnesses' regression inputs and, after a long `make fuzz`, a
sample of their corpus: any outcome but a lost job or a dead worker. While they run, the workers are killed
with SIGKILL (a supervisor restarts them, as an orchestrator would), Postgres is restarted, the
broker (Tansu on its s3:// engine, which keeps its log) is killed and restarted, and the object
store is stopped for a while. The bucket (sources and avatars) keeps versions. A few users are forgotten by forget
requests mixed into the stream, and a few more with `avatar-cropper forget --wait` while their jobs run and while
the faults are injected (a forget the stopped store fails stays pending until a worker completes it); each of them
also has a request stamped 200 s ahead (within the accepted clock skew) in the stream's second half;
the ledger is pruned all along (every few seconds the rows' and the forget tombstones' clocks are
moved past the retention and `avatar-cropper prune` runs; the workers prune on their own schedule
too). Then the DLQ is replayed, and every DLQ record of every forgotten user with it.

A third of the photo requests ask for several formats (CHAOS_FORMATS, default png,webp,avif, for the avatar;
WebP for a 96 px extra size; docs/FORMATS.md); every object of every current version is then checked: a file of
its key's format at its key's size, the same bytes as its version's own copy, and no EXIF, XMP or IPTC.

It prints and asserts: jobs produced, jobs with a result, lost jobs (0), jobs still failed
transiently after replay (0), double version bumps (0), published avatars whose bytes are not
those of the version Postgres names (0), stale overwrites (0), stuck partitions (0), and the
time to finish; and for every forgotten user, nothing left anywhere (every object of the bucket
listed, every version and delete marker under the user's prefix, every table of the schema queried; the tombstones
and the last looks of completed forgets apart), no forget left pending, and the newest record under the user's key
on the compacted results topic the forget's null (what compaction keeps). Version
bumps and stale overwrites are judged from the result events (the ledger is pruned), each applied
version owned by exactly one job. Exit status 0 only when every check holds.

The package: stack (the services and the worker's settings), sources (the uploads), jobs (the requests and
their production), workers (the supervised worker processes), results (the result reader), faults (what is done to
the stack while it runs, and the replays), checks (what the run must show), report (the figures and the verdict).

Usage: python -m chaos --bin DIR --run DIR [--jobs N] [--seed N]      (scripts/chaos.sh sets it up)
"""
import os
import sys

# The repository, and the generated Python messages (proto/python) every module imports.
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(root, "proto", "python"))
