#!/usr/bin/env bash
# The end-to-end part of `make bench` (bench/README.md): a few thousand crop requests
# through the real broker, worker, object store and Postgres, next to the render-only
# throughput of the same jobs at the same pool width, measured in the same run.
#
#   scripts/bench-e2e.sh [JOBS] [POOL_WIDTH]      defaults: 2000 jobs, pool width 2
#
# Prints one JSON object per measurement and writes bench/results/e2e.json.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
jobs=${1:-2000}
width=${2:-2}
corpus=${AVATAR_CORPUS:-$here/../shared/corpus}
export PKG_CONFIG_PATH="$here/.deps/librdkafka/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
python="$here/.deps/venv/bin/python"

echo "== e2e: building (release)"
swift build -c release --product avatar-cropper 2>&1 | { grep -E "error|complete" || true; } | tail -1
swift build -c release --product avatar-bench 2>&1 | { grep -E "error|complete" || true; } | tail -1
bin="$(swift build -c release --show-bin-path)"

work="$here/bench/results/e2e"
rm -rf "$work"; mkdir -p "$work/store/uploads"
# A realistic mix: phone photos (one EXIF-6), a DSLR photo, a P3 photo, a small one.
for f in camera/phone_iphone-4s_8mp_orientation-6.jpg camera/phone_samsung-galaxy-s4_9.6mp.jpg \
         camera/dslr_nikon-d3100_14mp_big-exif.jpg colour/p3_displayp3-v4_craft-beer.jpg \
         orientation/Landscape_1.jpg size/craft-beer_640x960.jpg; do
  cp "$corpus/$f" "$work/store/uploads/$(basename "$f")"
done
"$python" - "$work" "$jobs" <<'PY'
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

echo "== e2e: render-only throughput of the same jobs ($jobs jobs, $width threads)"
"$bin/avatar-bench" throughput --jobs "$work/jobs.json" --root "$work/store" --threads "$width" | tee "$work/render-only.json"

echo "== e2e: services"
export AVATAR_RUN_DIR="$work/run"
export AVATAR_PG_PORT=${AVATAR_PG_PORT:-56532} AVATAR_KAFKA_PORT=${AVATAR_KAFKA_PORT:-59492} AVATAR_S3_PORT=${AVATAR_S3_PORT:-58833}
scripts/services.sh start postgres kafka
worker_pid=""
cleanup() {
  [ -n "$worker_pid" ] && kill -TERM "$worker_pid" 2>/dev/null && wait "$worker_pid" 2>/dev/null || true
  scripts/services.sh stop
}
trap cleanup EXIT
set -a; source "$AVATAR_RUN_DIR/env"; set +a
export AVATAR_DATABASE_URL="$AVATAR_TEST_DATABASE_URL" AVATAR_KAFKA_BROKERS="$AVATAR_TEST_KAFKA_BROKERS"
export AVATAR_STORAGE_URL="file://$work/store" AVATAR_WORKER_POOL_WIDTH="$width" AVATAR_LOG_LEVEL=warning
export AVATAR_KAFKA_PROPERTY_SESSION_TIMEOUT_MS=6000 AVATAR_HTTP_PORT=0
"$bin/avatar-cropper" migrate >/dev/null
"$bin/avatar-cropper" topics --partitions 4 >/dev/null
"$bin/avatar-cropper" worker >"$work/worker.log" 2>&1 &
worker_pid=$!

echo "== e2e: $jobs jobs through broker, worker, storage and Postgres"
"$python" bench/e2e.py "$AVATAR_KAFKA_BROKERS" avatar.crop.requests avatar.crop.results "$work/jobs.json" "$work/e2e.json"

# CPU seconds each process used: on a 2-core machine the broker, the database and the
# driver share the cores the worker renders on, which render-only does not.
"$python" - "$work/cpu.json" "$AVATAR_RUN_DIR" "$worker_pid" <<'PY'
import json, os, sys
out, run, worker = sys.argv[1], sys.argv[2], int(sys.argv[3])
tick = os.sysconf("SC_CLK_TCK")

def stat(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / tick  # ppid, cpu seconds

postmaster = int(open(os.path.join(run, "postgres", "postmaster.pid")).readline())
tansu = int(open(os.path.join(run, "tansu.pid")).read())
totals = {"worker": stat(worker)[1], "broker (tansu)": stat(tansu)[1], "postgres": stat(postmaster)[1]}
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        ppid, cpu = stat(pid)
    except OSError:
        continue
    if ppid == postmaster:
        totals["postgres"] += cpu
json.dump({k: round(v, 1) for k, v in totals.items()}, open(out, "w"))
PY

"$python" - "$work/render-only.json" "$work/e2e.json" "$width" "$work/cpu.json" <<'PY' | tee "$here/bench/results/e2e.json"
import json, sys
render = json.load(open(sys.argv[1]))
e2e = json.load(open(sys.argv[2]))
ratio = e2e["throughput_jobs_per_s"] / render["throughput_jobs_per_s"]
print(json.dumps({"pool_width": int(sys.argv[3]), "jobs": e2e["jobs"],
                  "render_only_jobs_per_s": round(render["throughput_jobs_per_s"], 2),
                  "end_to_end_jobs_per_s": round(e2e["throughput_jobs_per_s"], 2),
                  "ratio": round(ratio, 3), "target": ">= 0.9", "pass": ratio >= 0.9,
                  "latency_ms": {k: round(v, 1) for k, v in e2e["latency_ms"].items()},
                  "failures": e2e["failures"], "missing": e2e["missing"],
                  "render_only_seconds": round(render["seconds"], 1), "end_to_end_seconds": round(e2e["elapsed_s"], 1),
                  "cpu_seconds": dict(json.load(open(sys.argv[4])), driver=e2e["driver_cpu_s"])}, indent=2))
PY
