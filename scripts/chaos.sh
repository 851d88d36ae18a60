#!/usr/bin/env bash
# `make chaos`: the real stack under faults (the harness, scripts/chaos/, says what it does and checks).
# Starts its own Postgres, Tansu on its durable s3:// engine and SeaweedFS on 127.0.0.1
# (ports apart from `make test`'s), builds the worker, runs the scenario, stops what it started.
#   scripts/chaos.sh [JOBS]      default 2000 jobs; the figures land in out/chaos/report.json
#   CHAOS_PG_PORT, CHAOS_KAFKA_PORT, CHAOS_S3_PORT and CHAOS_HTTP_PORT move its ports (two runs on one machine).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
export PKG_CONFIG_PATH="$here/.deps/librdkafka/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
jobs=${1:-${CHAOS_JOBS:-2000}}

echo "== chaos: building"
swift build --product avatar-cropper 2>&1 | { grep -E "error|complete" || true; } | tail -3
bin="$(swift build --show-bin-path)"

out="$here/out/chaos"
export AVATAR_RUN_DIR="$out/run" AVATAR_KAFKA_DURABLE=1
scripts/services.sh stop  # an earlier run's, if it was interrupted
rm -rf "$out"; mkdir -p "$out"
export AVATAR_PG_PORT=${CHAOS_PG_PORT:-56432} AVATAR_KAFKA_PORT=${CHAOS_KAFKA_PORT:-59592} \
  AVATAR_S3_PORT=${CHAOS_S3_PORT:-57333}
scripts/services.sh start
trap 'scripts/services.sh stop' EXIT
PYTHONPATH="$here/scripts${PYTHONPATH:+:$PYTHONPATH}" "$here/.deps/venv/bin/python" -m chaos --bin "$bin" \
  --run "$AVATAR_RUN_DIR" --jobs "$jobs" \
  --report "$out/report.json"
