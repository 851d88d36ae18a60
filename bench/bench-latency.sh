#!/usr/bin/env bash
# Latency at low load (bench/README.md, "Latency at low load"; a step of `make bench-all`):
# one worker with default settings on SeaweedFS, Postgres and the broker, crop requests at RATE jobs/s (default 2)
# cycling four photos — the iPhone HEICs (12 MP; 24 MP, iOS 18) and the same photos as baseline JPEGs
# (bench/gen_inputs.py's twins) — each at the square most users keep (the centred square at 1.05 × the minimum
# zoom: the short side / 1.05). Two configurations, interleaved over ROUNDS rounds of SECONDS each:
#   before   the consumer's fetch wait at librdkafka's 500 ms and one decoding thread per render
#            (kafka.property.fetch.wait.max.ms=500, worker.decode-cores=1): the worker before issue 29
#   after    the defaults
# and, after each run, the broker's CPU while the worker idles (the fetch wait's cost).
#
#   bench/bench-latency.sh [RATE] [SECONDS] [ROUNDS]      defaults: 2 jobs/s, 60 s, 2 rounds
#
# Writes bench/results/latency/*.json and draws bench/latency.png (bench/plots.py latency).
set -euo pipefail
unset MALLOC_ARENA_MAX
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
rate=${1:-2}
seconds=${2:-60}
rounds=${3:-2}
export PKG_CONFIG_PATH="$here/.deps/librdkafka/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
python="$here/.deps/venv/bin/python"
corpus=${AVATAR_TEST_CORPUS:-$here/../shared/corpus}
cache="$here/bench/.cache"
heics=(formats/heic_iphone-7-plus_Example1.heic formats/heic_iphone-ios18_tmap-gainmap_4284x5712.heic)
for f in "${heics[@]}"; do
  [ -f "$corpus/$f" ] || { echo "bench-latency: skipped, $corpus/$f is missing (set AVATAR_TEST_CORPUS)" >&2; exit 0; }
done

echo "== latency: building (release)"
swift build -c release --product avatar-cropper 2>&1 | { grep -E "error|complete" || true; } | tail -1
bin="$(swift build -c release --show-bin-path)"

work="$here/bench/results/latency"
rm -rf "$work"; mkdir -p "$work/photos" "$cache"
"$python" - "$cache" "$work/photos" "$corpus" "${heics[@]}" <<'PY'
import os, shutil, sys
sys.path.insert(0, "bench")
from gen_inputs import make_twins, twin_name
cache, photos, corpus, heics = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
paths = [os.path.join(corpus, h) for h in heics]
make_twins(paths, cache)
for path in paths:
    shutil.copy(path, photos)
    shutil.copy(os.path.join(cache, twin_name(path)), photos)
PY

echo "== latency: services"
export AVATAR_RUN_DIR="$work/run"
export AVATAR_PG_PORT=${AVATAR_PG_PORT:-56632} AVATAR_KAFKA_PORT=${AVATAR_KAFKA_PORT:-59592} AVATAR_S3_PORT=${AVATAR_S3_PORT:-58933}
scripts/services.sh start
worker_pid=""
cleanup() { [ -z "$worker_pid" ] || { kill -TERM "$worker_pid" 2>/dev/null; wait "$worker_pid" 2>/dev/null || true; }; scripts/services.sh stop; }
trap cleanup EXIT
set -a; source "$AVATAR_RUN_DIR/env"; set +a
export AVATAR_DATABASE_URL="$AVATAR_TEST_DATABASE_URL" AVATAR_KAFKA_BROKERS="$AVATAR_TEST_KAFKA_BROKERS"
export AVATAR_DATABASE_TOMBSTONE_KEY="$AVATAR_TEST_TOMBSTONE_KEY"
export AVATAR_STORAGE_URL="s3://$AVATAR_TEST_S3_BUCKET?endpoint=$AVATAR_TEST_S3_ENDPOINT&region=$AVATAR_TEST_S3_REGION&pathStyle=true"
export AVATAR_STORAGE_S3_ACCESS_KEY_ID="$AVATAR_TEST_S3_ACCESS_KEY" AVATAR_STORAGE_S3_SECRET_ACCESS_KEY="$AVATAR_TEST_S3_SECRET_KEY"
export AVATAR_LOG_LEVEL=warning AVATAR_HTTP_PORT=0 AVATAR_KAFKA_PROPERTY_SESSION_TIMEOUT_MS=6000
"$bin/avatar-cropper" migrate >/dev/null
"$bin/avatar-cropper" topics --partitions 4 >/dev/null

# The photos into the bucket (SigV4, as the app's upload would), and the job list: the centred square at
# 1.05 × the minimum zoom, in the displayed photo's pixels.
"$python" - "$work" <<'PY'
import hashlib, json, os, subprocess, sys
import pyvips
work = sys.argv[1]
env = os.environ
jobs = []
for name in sorted(os.listdir(os.path.join(work, "photos"))):
    path = os.path.join(work, "photos", name)
    data = open(path, "rb").read()
    key = "uploads/" + name
    status = subprocess.run(
        ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "--data-binary", "@" + path,
         "-H", "x-amz-content-sha256: " + hashlib.sha256(data).hexdigest(),
         "--aws-sigv4", f"aws:amz:{env['AVATAR_TEST_S3_REGION']}:s3",
         "--user", f"{env['AVATAR_TEST_S3_ACCESS_KEY']}:{env['AVATAR_TEST_S3_SECRET_KEY']}",
         f"{env['AVATAR_TEST_S3_ENDPOINT']}/{env['AVATAR_TEST_S3_BUCKET']}/{key}"],
        capture_output=True, text=True).stdout
    if status != "200":
        sys.exit(f"bench-latency: upload of {name} answered {status}")
    image = pyvips.Image.new_from_file(path)
    width, height = image.width, image.height
    if name.endswith(".jpg") and image.get_typeof("orientation") and image.get("orientation") in (5, 6, 7, 8):
        width, height = height, width
    side = int(min(width, height) / 1.05)
    label = ("HEIC " if name.endswith(".heic") else "JPEG ") + ("24 MP iOS 18" if "4284" in name else "12 MP")
    jobs.append({"label": label, "source_key": key, "bytes": len(data),
                 "rect": {"x": (width - side) // 2, "y": (height - side) // 2, "side": side}})
json.dump(jobs, open(os.path.join(work, "jobs.json"), "w"), indent=1)
PY

tansu_cpu() {  # the broker's CPU seconds so far
  "$python" -c 'import os,sys; f=open(f"/proc/{int(open(sys.argv[1]).read())}/stat").read().rsplit(")",1)[1].split(); print((int(f[11])+int(f[12]))/os.sysconf("SC_CLK_TCK"))' "$AVATAR_RUN_DIR/tansu.pid"
}
run() {  # NAME ROUND [ENV...]
  local name=$1 round=$2; shift 2
  env "$@" "$bin/avatar-cropper" worker >>"$work/worker.log" 2>&1 &
  worker_pid=$!
  sleep 10  # group join and partition assignment
  echo "== latency: $name, round $round: $rate jobs/s for $seconds s"
  "$python" bench/latency.py "$AVATAR_KAFKA_BROKERS" avatar.crop.requests avatar.crop.results avatar.crop.metrics \
    "$work/jobs.json" "$rate" "$seconds" "$work/$name-$round.json"
  local before after
  before=$(tansu_cpu); sleep 20; after=$(tansu_cpu)
  "$python" -c 'import json,sys; p=sys.argv[1]; r=json.load(open(p)); r["broker_idle_cpu_share"]=round((float(sys.argv[3])-float(sys.argv[2]))/20, 3); json.dump(r, open(p,"w"), indent=1); print("broker CPU while idle:", r["broker_idle_cpu_share"], "of a core")' \
    "$work/$name-$round.json" "$before" "$after"
  kill -TERM "$worker_pid"; wait "$worker_pid" || true
  worker_pid=""
}
for ((round = 1; round <= rounds; round++)); do
  if ((round % 2)); then order=(before after); else order=(after before); fi
  for name in "${order[@]}"; do
    if [ "$name" = before ]; then
      run before "$round" AVATAR_KAFKA_PROPERTY_FETCH_WAIT_MAX_MS=500 AVATAR_WORKER_DECODE_CORES=1
    else
      run after "$round"
    fi
  done
done
"$python" bench/plots.py latency "$work" "$here/bench/latency.png"
