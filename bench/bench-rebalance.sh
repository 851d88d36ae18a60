#!/usr/bin/env bash
# Rebalancing under steady load, eager against cooperative in the same run (bench/README.md): RATE jobs/s for
# four phases of BENCH_REBALANCE_PHASE_S (default 30) s while the group goes 1 -> 2 -> 3 -> 2 workers of pool
# width 1 (the last step by SIGTERM). Each protocol gets topics and a consumer group of its own (a group cannot
# mix them). Reports per protocol: the longest gap without any result, jobs redone, lost, double bumps, and the
# throughput dip after each step (bench/rebalance.py), into WORK/rebalance.json.
#
#   bench/bench-rebalance.sh RATE [WORK]      (run by bench/bench-e2e.sh; alone it builds and starts what
#                                                it needs, with the end-to-end half's job list)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
rate=$1
work=${2:-$here/bench/results/e2e}
phase_s=${BENCH_REBALANCE_PHASE_S:-30}
python="$here/.deps/venv/bin/python"
export PKG_CONFIG_PATH="$here/.deps/librdkafka/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# BENCH_BIN: a folder holding another build of avatar-cropper (bench/README.md says which the figures used).
bin=${BENCH_BIN:-$(swift build -c release --show-bin-path)}
[ -x "$bin/avatar-cropper" ] || swift build -c release --product avatar-cropper 2>&1 | tail -1
[ -f "$work/jobs.json" ] || { echo "bench-rebalance: $work/jobs.json missing: run bench/bench-e2e.sh" >&2; exit 1; }

pids=()
stop_all() {  # one at a time (bench/bench-e2e.sh says why)
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  pids=()
}
source bench/bench-worker-env.sh
"$bin/avatar-cropper" migrate >/dev/null
cleanup() { stop_all; [ "$own_services" = 0 ] || scripts/services.sh stop; }
trap cleanup EXIT

: >"$work/steps.txt"
for name in eager cooperative; do
  echo "== rebalance ($name): 1 -> 2 -> 3 -> 2 workers of pool width 1, $rate jobs/s, $phase_s s apart"
  export AVATAR_KAFKA_GROUP_ID="bench-$name-$(date +%s)"
  for t in requests results metrics dlq; do export "AVATAR_KAFKA_TOPIC_${t^^}=bench.$AVATAR_KAFKA_GROUP_ID.$t"; done
  # eager: librdkafka's range assignor; cooperative: the worker's default (cooperative-sticky).
  if [[ $name == eager ]]; then
    export AVATAR_KAFKA_PROPERTY_PARTITION_ASSIGNMENT_STRATEGY=range
  else
    unset AVATAR_KAFKA_PROPERTY_PARTITION_ASSIGNMENT_STRATEGY
  fi
  "$bin/avatar-cropper" topics --partitions 4 >/dev/null
  start_worker() { AVATAR_WORKER_RENDER_SLOTS=1 "$bin/avatar-cropper" worker >>"$work/worker.log" 2>&1 & pids+=($!); }
  start_worker
  sleep 8  # group join and partition assignment
  "$python" bench/rebalance.py drive "$AVATAR_KAFKA_BROKERS" "$AVATAR_KAFKA_TOPIC_REQUESTS" \
    "$AVATAR_KAFKA_TOPIC_RESULTS" "$work/jobs.json" "$rate" "$((4 * phase_s))" "$work/$name.rebalance.json" &
  driver=$!
  echo "$name 1 $(date +%s.%N)" >>"$work/steps.txt"
  sleep "$phase_s"
  for n in 2 3; do
    start_worker
    echo "$name $n $(date +%s.%N)" >>"$work/steps.txt"
    sleep "$phase_s"
  done
  echo "$name 2 $(date +%s.%N)" >>"$work/steps.txt"
  kill -TERM "${pids[2]}"; wait "${pids[2]}" 2>/dev/null || true
  pids=("${pids[@]:0:2}")
  wait "$driver"
  stop_all
done

# Every job is a new user: a profile past version 1 is a double bump.
double_bumps=$(psql "$AVATAR_DATABASE_URL" -Atc "SELECT count(*) FROM profiles WHERE avatar_version > 1")
"$python" bench/rebalance.py report "$work/steps.txt" "$work/eager.rebalance.json" "$work/cooperative.rebalance.json" \
  | "$python" -c 'import json,sys; json.dump({"double_bumps": int(sys.argv[1]), "phase_s": int(sys.argv[2]), "runs": json.load(sys.stdin)}, open(sys.argv[3], "w"), indent=2)' \
    "$double_bumps" "$phase_s" "$work/rebalance.json"
cat "$work/rebalance.json"
