#!/usr/bin/env bash
# The end-to-end step of `make bench-all` (bench/README.md, "End to end"): crop requests through the real broker,
# worker, object store and Postgres, measured in one run:
#   1. render-only throughput of the jobs at the pool width (avatar-bench throughput);
#   2. sustained end-to-end throughput: JOBS produced at once, one worker of POOL_WIDTH;
#   3. open loop at 70 % of (2) for BENCH_OPEN_LOOP_S (default 120) s: latency p50/p95/p99;
#   4. one worker of pool width 1, then two of pool width 1 in one group: JOBS/2 at once each; first
#      with each worker pinned to a core of its own (taskset: a width-1 worker is a one-core worker, as
#      with a CPU limit of 1), then unpinned, where a lone worker also uses the second core;
#   5. rebalancing under steady load, eager against cooperative: 1 -> 2 -> 3 -> 2 workers (bench/rebalance.py):
#      longest gap without a result, jobs redone, lost, double bumps, throughput dip per step;
#   6. tracing on (every job sampled, exported over OTLP/HTTP) against off: the worker's CPU per job.
#
#   bench/bench-e2e.sh [JOBS] [POOL_WIDTH]      defaults: 1000 jobs, pool width 2
#
# Prints one JSON object per measurement and writes bench/results/e2e.json (plots.py draws it).
set -euo pipefail
# bench/bench.sh caps glibc arenas for the render half (the same cap in all three render processes).
# Here the worker caps its own (Vips.initialise) and Postgres, the broker and the driver run as they
# would anywhere else.
unset MALLOC_ARENA_MAX
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
jobs=${1:-1000}
open_loop_s=${BENCH_OPEN_LOOP_S:-120}
width=${2:-2}
export PKG_CONFIG_PATH="$here/.deps/librdkafka/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
python="$here/.deps/venv/bin/python"

echo "== e2e: building (release)"
swift build -c release --product avatar-cropper 2>&1 | { grep -E "error|complete" || true; } | tail -1
swift build --package-path bench -c release --product avatar-bench 2>&1 | { grep -E "error|complete" || true; } | tail -1
bin="$(swift build -c release --show-bin-path)"
bench_bin="$(swift build --package-path bench -c release --show-bin-path)"

work="$here/bench/results/e2e"
rm -rf "$work"; mkdir -p "$work/store/uploads"
bench/bench-e2e-jobs.sh "$work" "$jobs"

echo "== e2e: render-only throughput of the same jobs ($jobs jobs, $width threads)"
"$bench_bin/avatar-bench" throughput --jobs "$work/jobs.json" --root "$work/store" --threads "$width" | tee "$work/render-only.json"

echo "== e2e: services"
export AVATAR_RUN_DIR="$work/run"
export AVATAR_PG_PORT=${AVATAR_PG_PORT:-56532} AVATAR_KAFKA_PORT=${AVATAR_KAFKA_PORT:-59492} AVATAR_S3_PORT=${AVATAR_S3_PORT:-58833}
scripts/services.sh start postgres kafka
trap 'scripts/services.sh stop' EXIT
set -a; source "$AVATAR_RUN_DIR/env"; set +a
export AVATAR_DATABASE_URL="$AVATAR_TEST_DATABASE_URL" AVATAR_KAFKA_BROKERS="$AVATAR_TEST_KAFKA_BROKERS"
export AVATAR_DATABASE_TOMBSTONE_KEY="$AVATAR_TEST_TOMBSTONE_KEY"
export AVATAR_STORAGE_URL="file://$work/store" AVATAR_LOG_LEVEL=warning
export AVATAR_KAFKA_PROPERTY_SESSION_TIMEOUT_MS=6000 AVATAR_HTTP_PORT=0
"$bin/avatar-cropper" migrate >/dev/null
"$bin/avatar-cropper" topics --partitions 4 >/dev/null

worker_pids=()
start_workers() {  # COUNT WIDTH [pinned]: pinned puts worker i on core i (taskset)
  local i pin=()
  for ((i = 0; i < $1; i++)); do
    [[ ${3:-} == pinned ]] && pin=(taskset -c "$((i % $(nproc)))")
    AVATAR_WORKER_RENDER_SLOTS=$2 "${pin[@]}" "$bin/avatar-cropper" worker >>"$work/worker.log" 2>&1 &
    worker_pids+=($!)
  done
  sleep 8  # group join and partition assignment
}
# One at a time: Tansu's group coordinator can be left with no member ever assigned again when two
# members leave the group at the same instant (seen here: the next worker waited for minutes).
stop_workers() {
  local pid
  for pid in "${worker_pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  worker_pids=()
}
cleanup() { stop_workers; scripts/services.sh stop; }
trap cleanup EXIT
drive() {  # OUT [RATE DURATION]
  "$python" bench/e2e.py "$AVATAR_KAFKA_BROKERS" avatar.crop.requests avatar.crop.results "$work/jobs.json" "$@"
}
half="$work/jobs-half.json"
half_jobs=$((jobs / 2))
"$python" -c 'import json,sys; j=json.load(open(sys.argv[1])); json.dump(j[:len(j)//2], open(sys.argv[2],"w"))' \
  "$work/jobs.json" "$half"

start_workers 1 "$width"
echo "== e2e: sustained, $jobs jobs at once, one worker of pool width $width"
drive "$work/e2e.json"
worker_pid=${worker_pids[0]}
# CPU seconds each process used during the sustained run: on a 2-core machine the broker, the
# database and the driver share the cores the worker renders on, which render-only does not.
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

rate=$("$python" -c 'import json,sys; print(round(0.7 * json.load(open(sys.argv[1]))["throughput_jobs_per_s"], 2))' "$work/e2e.json")
echo "== e2e: open loop at $rate jobs/s (70 % of sustained) for $open_loop_s s"
drive "$work/open-loop.json" "$rate" "$open_loop_s"
stop_workers

drive_half() { "$python" bench/e2e.py "$AVATAR_KAFKA_BROKERS" avatar.crop.requests avatar.crop.results "$half" "$1"; }
for placement in pinned unpinned; do
  suffix=""; [[ $placement == pinned ]] && suffix=-pinned
  echo "== e2e: one worker of pool width 1 ($placement), $((jobs / 2)) jobs"
  start_workers 1 1 "$placement"
  drive_half "$work/one-worker$suffix.json"
  stop_workers
  echo "== e2e: two workers of pool width 1 in one group ($placement), $((jobs / 2)) jobs"
  start_workers 2 1 "$placement"
  drive_half "$work/two-workers$suffix.json"
  stop_workers
done

# 5. Rebalancing under steady load, eager against cooperative (bench/bench-rebalance.sh), at 60 % of one
#    width-1 worker's throughput.
stop_workers
rebalance_rate=$("$python" -c 'import json,sys; print(round(0.6 * json.load(open(sys.argv[1]))["throughput_jobs_per_s"], 2))' "$work/one-worker.json")
bench/bench-rebalance.sh "$rebalance_rate" "$work"

# 6. Tracing on against off (bench/bench-tracing.sh): the worker's CPU per job, half the jobs per round.
bench/bench-tracing.sh "$work" "$half_jobs" "$width"

"$python" - "$work" "$width" "$(cat /proc/loadavg)" <<'PY' | tee "$here/bench/results/e2e.json"
import json, os, sys
work, width, load = sys.argv[1], int(sys.argv[2]), sys.argv[3]
read = lambda name: json.load(open(os.path.join(work, name)))
render, e2e, open_loop = read("render-only.json"), read("e2e.json"), read("open-loop.json")
one, two = read("one-worker-pinned.json"), read("two-workers-pinned.json")
one_free, two_free = read("one-worker.json"), read("two-workers.json")
ratio = e2e["throughput_jobs_per_s"] / render["throughput_jobs_per_s"]
tail = open_loop["latency_ms"]["p99"] / open_loop["latency_ms"]["p50"]
scale = two["throughput_jobs_per_s"] / one["throughput_jobs_per_s"]
scale_free = two_free["throughput_jobs_per_s"] / one_free["throughput_jobs_per_s"]
lat = lambda r: {k: round(v, 1) for k, v in r["latency_ms"].items()}
run = lambda name, r: {"name": name, "jobs": r["jobs"], "jobs_per_s": round(r["throughput_jobs_per_s"], 2),
                       "latency_ms": lat(r), "failures": r["failures"], "missing": r["missing"]}
print(json.dumps({
    "pool_width": width, "jobs": e2e["jobs"], "load_average_after": load,
    "render_only_jobs_per_s": round(render["throughput_jobs_per_s"], 2),
    "end_to_end_jobs_per_s": round(e2e["throughput_jobs_per_s"], 2),
    "ratio": round(ratio, 3), "target": ">= 0.9", "pass": ratio >= 0.9,
    "latency_ms": lat(e2e), "failures": e2e["failures"], "missing": e2e["missing"],
    "render_only_seconds": round(render["seconds"], 1), "end_to_end_seconds": round(e2e["elapsed_s"], 1),
    "cpu_seconds": dict(json.load(open(os.path.join(work, "cpu.json"))), driver=e2e["driver_cpu_s"]),
    "open_loop": dict(run("open loop 70 %", open_loop), rate_jobs_per_s=round(open_loop["jobs"] / float(
        os.environ.get("BENCH_OPEN_LOOP_S", "120")), 2), p99_over_p50=round(tail, 2), target="<= 2", **{"pass": tail <= 2}),
    "workers": {"placement": "one core each (taskset)",
                "one_width_1_jobs_per_s": round(one["throughput_jobs_per_s"], 2),
                "two_width_1_jobs_per_s": round(two["throughput_jobs_per_s"], 2),
                "ratio": round(scale, 3), "target": ">= 1.8", "pass": scale >= 1.8,
                "unpinned": {"one_width_1_jobs_per_s": round(one_free["throughput_jobs_per_s"], 2),
                             "two_width_1_jobs_per_s": round(two_free["throughput_jobs_per_s"], 2),
                             "ratio": round(scale_free, 3)}},
    "rebalance": read("rebalance.json"),
    "tracing": read("tracing.json"),
    "runs": [run(f"burst, width {width}", e2e), run("open loop 70 %", open_loop),
             run("burst, 1 x width 1, pinned", one), run("burst, 2 x width 1, pinned", two),
             run("burst, 1 x width 1", one_free), run("burst, 2 x width 1", two_free)],
}, indent=2))
PY
"$python" bench/plots.py "$here/bench/results"  # the end-to-end figure (bench.sh drew the render one before this ran)
