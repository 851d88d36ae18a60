#!/usr/bin/env bash
# The end-to-end benchmarks' job list (bench/README.md): a realistic mix of photos (phone photos, one EXIF-6, a DSLR
# photo, a P3 photo, a small one) copied into WORK/store/uploads, and JOBS requests over them and four poses in
# WORK/jobs.json (a list of {"source_key", "pose"?}, what bench/e2e.py produces).
#
#   bench/bench-e2e-jobs.sh WORK JOBS      (run by bench/bench-e2e.sh and bench/bench-tracing.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=$1
jobs=$2
corpus=${AVATAR_TEST_CORPUS:-$here/../shared/corpus}
mkdir -p "$work/store/uploads"
for f in camera/phone_iphone-4s_8mp_orientation-6.jpg camera/phone_samsung-galaxy-s4_9.6mp.jpg \
         camera/dslr_nikon-d3100_14mp_big-exif.jpg colour/p3_displayp3-v4_craft-beer.jpg \
         orientation/Landscape_1.jpg size/craft-beer_640x960.jpg; do
  cp "$corpus/$f" "$work/store/uploads/$(basename "$f")"
done
"$here/.deps/venv/bin/python" - "$work" "$jobs" <<'PY'
import json, os, random, sys
work, count = sys.argv[1], int(sys.argv[2])
random.seed(7)
sources = sorted(os.listdir(os.path.join(work, "store", "uploads")))
poses = [None, {"scale": 0.6, "tx": 10, "ty": -20}, {"scale": 1.2, "tx": -30, "ty": 15}, {"scale": 5.0}]
jobs = []
for i in range(count):
    job = {"source_key": "uploads/" + sources[i % len(sources)]}
    pose = poses[(i // len(sources)) % len(poses)]
    if pose:
        job["pose"] = pose
    jobs.append(job)
json.dump(jobs, open(os.path.join(work, "jobs.json"), "w"))
PY
