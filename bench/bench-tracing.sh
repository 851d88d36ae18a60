#!/usr/bin/env bash
# Tracing's cost (issue 17; bench/README.md, "End to end"): the same jobs through one real worker of
# pool width WIDTH with tracing off, then on (every job sampled: OTEL_TRACES_SAMPLER=always_on, its spans exported
# over OTLP/HTTP protobuf to a receiver on 127.0.0.1 that decodes them), interleaved over BENCH_TRACING_ROUNDS
# (default 3) rounds. Measures the worker's CPU per job (utime + stime from /proc, from after its start to a few
# seconds after the last result, so the exporter's last batch is in) and the spans received; writes
# WORK/tracing.json.
#
#   bench/bench-tracing.sh [WORK] [JOBS] [WIDTH]   (step 6 of bench/bench-e2e.sh, with its services and job
#                                                    list; alone it builds and starts what it needs)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
work=${1:-$here/bench/results/e2e}
jobs=${2:-500}
width=${3:-2}
rounds=${BENCH_TRACING_ROUNDS:-3}
python="$here/.deps/venv/bin/python"
export PKG_CONFIG_PATH="$here/.deps/librdkafka/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
bin=${BENCH_BIN:-$(swift build -c release --show-bin-path)}
[ -x "$bin/avatar-cropper" ] || swift build -c release --product avatar-cropper 2>&1 | tail -1
[ -f "$work/jobs.json" ] || bench/bench-e2e-jobs.sh "$work" "$jobs"
"$python" -c 'import json,sys; j=json.load(open(sys.argv[1])); json.dump(j[:int(sys.argv[3])], open(sys.argv[2],"w"))' \
  "$work/jobs.json" "$work/jobs-tracing.json" "$jobs"

receiver_pid=""
worker_pid=""
own_services=0
cleanup() {
  [ -n "$worker_pid" ] && { kill -TERM "$worker_pid" 2>/dev/null || true; wait "$worker_pid" 2>/dev/null || true; }
  [ -n "$receiver_pid" ] && { kill -TERM "$receiver_pid" 2>/dev/null || true; wait "$receiver_pid" 2>/dev/null || true; }
  if [ "$own_services" = 1 ]; then scripts/services.sh stop; fi
}
trap cleanup EXIT
source bench/bench-worker-env.sh
# Topics and a group of its own, so nothing of the other steps' traffic is measured here.
export AVATAR_KAFKA_TOPIC_REQUESTS=bench.tracing.requests AVATAR_KAFKA_TOPIC_RESULTS=bench.tracing.results
export AVATAR_KAFKA_TOPIC_DLQ=bench.tracing.dlq AVATAR_KAFKA_TOPIC_METRICS=bench.tracing.metrics
export AVATAR_KAFKA_GROUP_ID=bench-tracing
"$bin/avatar-cropper" migrate >/dev/null
"$bin/avatar-cropper" topics --partitions 4 >/dev/null

spans="$work/tracing-spans.jsonl"
: >"$spans"
"$python" Tests/AvatarWorkerTests/python/otlp_receiver.py "$spans" >"$work/otlp-port" &
receiver_pid=$!
for _ in $(seq 100); do [ -s "$work/otlp-port" ] && break; sleep 0.1; done
otlp_port=$(head -1 "$work/otlp-port")

ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }  # utime + stime, in clock ticks
: >"$work/tracing-rounds.jsonl"
for ((round = 1; round <= rounds; round++)); do
  for mode in off on; do
    if [ "$mode" = on ]; then
      export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$otlp_port" OTEL_TRACES_SAMPLER=always_on
    else
      unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_TRACES_SAMPLER
    fi
    echo "== tracing: round $round, tracing $mode, $jobs jobs, one worker of pool width $width"
    AVATAR_WORKER_RENDER_SLOTS=$width "$bin/avatar-cropper" worker >>"$work/tracing-worker.log" 2>&1 &
    worker_pid=$!
    sleep 8  # group join and partition assignment
    spans_before=$(wc -l <"$spans")
    before=$(ticks "$worker_pid")
    "$python" bench/e2e.py "$AVATAR_KAFKA_BROKERS" "$AVATAR_KAFKA_TOPIC_REQUESTS" "$AVATAR_KAFKA_TOPIC_RESULTS" \
      "$work/jobs-tracing.json" "$work/tracing-$mode-$round.json" >/dev/null
    sleep 6  # the exporter's schedule delay (5 s): its last batch is sent and counted
    after=$(ticks "$worker_pid")
    kill -TERM "$worker_pid"; wait "$worker_pid" || true; worker_pid=""
    spans_after=$(wc -l <"$spans")
    echo "{\"round\": $round, \"mode\": \"$mode\", \"cpu_ticks\": $((after - before)), \"spans\": $((spans_after - spans_before)), \"result\": \"tracing-$mode-$round.json\"}" \
      >>"$work/tracing-rounds.jsonl"
  done
done
unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_TRACES_SAMPLER

"$python" - "$work" "$(getconf CLK_TCK)" <<'PY' | tee "$work/tracing.json"
import json, os, statistics, sys
work, tick = sys.argv[1], int(sys.argv[2])
rounds = [json.loads(line) for line in open(os.path.join(work, "tracing-rounds.jsonl"))]
def per_job_us(r):
    result = json.load(open(os.path.join(work, r["result"])))
    return 1e6 * r["cpu_ticks"] / tick / max(1, result["jobs"] - result["missing"])
off = [per_job_us(r) for r in rounds if r["mode"] == "off"]
on = [per_job_us(r) for r in rounds if r["mode"] == "on"]
ratios = [b / a for a, b in zip(off, on)]
spans = [r["spans"] for r in rounds if r["mode"] == "on"]
jobs = json.load(open(os.path.join(work, rounds[0]["result"])))["jobs"]
print(json.dumps({
    "jobs_per_round": jobs, "rounds": len(off),
    "worker_cpu_us_per_job": {"off": [round(x) for x in off], "on": [round(x) for x in on]},
    "cost_us_per_job_median": round(statistics.median(on) - statistics.median(off)),
    "ratio_on_over_off": {"median": round(statistics.median(ratios), 3), "min": round(min(ratios), 3),
                          "max": round(max(ratios), 3)},
    "spans_per_job_on": [round(s / jobs, 1) for s in spans],
    "target": "<= 1.02", "pass": statistics.median(ratios) <= 1.02,
}, indent=2))
PY
