#!/usr/bin/env bash
# `make demo`: the whole product on this machine. Starts Postgres and a Kafka-protocol
# broker on 127.0.0.1, migrates, starts a worker, enqueues crop requests for the sample
# photos in Tests/Fixtures (one too small, one cut off, several rendered from the
# thumbnail-resolution fallback under a small memory budget), waits for their result events, prints them as a table,
# leaves the avatars in out/demo/store/users/…, draws a contact sheet
# (out/demo/contact-sheet.png), and stops what it started.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
photos="$here/Tests/Fixtures"
export PKG_CONFIG_PATH="$here/.deps/librdkafka/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

echo "== building"
swift build --product avatar-cropper 2>&1 | { grep -E "error|complete" || true; } | tail -3
bin="$(swift build --show-bin-path)/avatar-cropper"
scripts/fetch-face-model.sh "$(dirname "$bin")" >/dev/null

echo "== local renders (avatar-cropper crop, no infrastructure)"
crops="$here/out/demo/crops"; rm -rf "$here/out/demo"; mkdir -p "$crops"
printf '%-44s %-11s %-6s %-6s %-6s %-16s %-8s %s\n' photo source s_min s_max zoom clamps fallback ms
crop() { # fixture-path output-name args...
  local input=$1 name=$2; shift 2
  "$bin" crop "$photos/$input" -o "$crops/$name.png" --json "$@" >"$crops/$name.json" || true
  "$here/.deps/venv/bin/python" - "$input" "$crops/$name.json" <<'PY'
import json, sys
name, data = sys.argv[1], json.load(open(sys.argv[2]))
if "error" in data:
    print(f"{name:44} {data['error']['code']}: {data['error']['message']}")
else:
    clamps = ",".join(k for k in ("zoom", "quality", "pan") if data.get(f"{k}_clamped") or (k == "quality" and data.get("quality_limited"))) or "-"
    print(f"{name:44} {data['source_width']}x{data['source_height']:<6} {data['s_min']:<6.3f} {data['s_max']:<6.3f} "
          f"{data['scale_applied']:<6.3f} {clamps:16} {'yes' if data['fallback_used'] else 'no':8} {data['timings_ms']['total']:.0f}")
PY
}
crop orientation/Landscape_6.jpg exif6 --scale 0.8 --tx 20 --ty -30
crop colour/p3_displayp3-v4_craft-beer.jpg p3-zoomed --scale 5 --tx 300 --ty 0
crop colour/cmyk_swop-profile_channel.jpg cmyk
crop colour/p3_displayp3-v4_craft-beer.jpg p3-rect --rect 300,100,700
crop formats/heic_iphone-7-plus_1008x756.heic heic
crop formats/webp_lossy_gallery-4_1024x772.webp webp
crop orientation/Landscape_1.jpg fallback --fallback
crop size/craft-beer_319x479.jpg too-small
echo "(avatars in out/demo/crops/)"

echo "== starting services"
scripts/services.sh start postgres kafka
worker_pid=""
cleanup() {
  [ -n "$worker_pid" ] && kill -TERM "$worker_pid" 2>/dev/null && wait "$worker_pid" 2>/dev/null || true
  scripts/services.sh stop
}
trap cleanup EXIT
set -a; source "${AVATAR_RUN_DIR:-$here/.run}/env"; set +a

out="$here/out/demo"
mkdir -p "$out/store/uploads"
export AVATAR_DATABASE_URL="$AVATAR_TEST_DATABASE_URL"
export AVATAR_DATABASE_TOMBSTONE_KEY="$AVATAR_TEST_TOMBSTONE_KEY"
export AVATAR_KAFKA_BROKERS="$AVATAR_TEST_KAFKA_BROKERS"
export AVATAR_STORAGE_URL="file://$out/store"
export AVATAR_STORAGE_PUBLIC_BASE_URL="https://avatars.example.test"
export AVATAR_KAFKA_PROPERTY_SESSION_TIMEOUT_MS=6000
export AVATAR_LOG_LEVEL=${AVATAR_LOG_LEVEL:-notice}
# /metrics, /healthz and /readyz on loopback only.
export AVATAR_HTTP_HOST=127.0.0.1 AVATAR_HTTP_PORT=${AVATAR_HTTP_PORT:-18080}
# A small memory budget (24 MiB): JPEGs decoded by region fit at full resolution; a file decoded
# whole (the HEIC here), or a job that does not fit beside the ones already running, takes the
# thumbnail-resolution fallback, so the table shows both. (At 12 MiB every job falls back.)
export AVATAR_WORKER_MEMORY_BUDGET_MB=${AVATAR_WORKER_MEMORY_BUDGET_MB:-24}

echo "== migrating and creating topics"
"$bin" migrate
"$bin" topics --partitions 4

# The app uploads originals; here we copy sample photos into the store's uploads/ prefix.
jobs="$out/jobs.jsonl"; : >"$jobs"
add() { # fixture-path geometry-json
  local name; name=$(basename "$1")
  [ -f "$out/store/uploads/$name" ] || cp "$photos/$1" "$out/store/uploads/$name"
  local user; user=$(python3 -c 'import uuid; print(uuid.uuid4())')
  echo "{\"userId\": \"$user\", \"sourceKey\": \"uploads/$name\"${2:+, $2}}" >>"$jobs"
}
# A photo cut off at a third of its bytes: the header reads, the pixels do not.
head -c "$(( $(stat -c %s "$photos/orientation/Landscape_1.jpg") / 3 ))" "$photos/orientation/Landscape_1.jpg" \
  >"$out/store/uploads/cut-off.jpg"
add orientation/Landscape_8.jpg '"pose": {"scale": 0.8, "tx": 20, "ty": -30}, "extraSizes": [80], "wantBlurhash": true'
add orientation/Landscape_6.jpg '"pose": {"scale": 2.5, "tx": -150, "ty": 40}, "referenceWidth": 900, "referenceHeight": 600'
add colour/p3_displayp3-v4_craft-beer.jpg '"rect": {"x": 300, "y": 100, "side": 700}'
add colour/cmyk_swop-profile_channel.jpg ''
add formats/heic_iphone-7-plus_1008x756.heic ''
add formats/webp_lossy_gallery-4_1024x772.webp '"pose": {"scale": 5.0, "tx": 400, "ty": 0}'
add size/craft-beer_640x640.jpg ''
add size/craft-beer_319x479.jpg ''
add cut-off.jpg ''
# An RGBA PNG on a red background: too big for the demo's memory budget at full resolution.
add colour/rgba_blackbug_2048x1536.png '"background": "#D03030"'
# No pose, default face: photos with faces from Debian packages when installed (libdlib19.1's PASCAL examples,
# python3-skimage's astronaut); a group photo again with the centred default, for comparison. The contact sheet
# draws the faces found (green, kept; grey, not) with the square.
add_packaged() { # path geometry-json
  [ -f "$1" ] || return 0
  local name; name=$(basename "$1")
  cp "$1" "$out/store/uploads/$name"
  local user; user=$(python3 -c 'import uuid; print(uuid.uuid4())')
  echo "{\"userId\": \"$user\", \"sourceKey\": \"uploads/$name\"${2:+, $2}}" >>"$jobs"
}
pascal=/usr/share/doc/libdlib19.1/examples/faces
add_packaged /usr/lib/python3/dist-packages/skimage/data/astronaut.png ''
add_packaged "$pascal/2008_002506.jpg" ''
add_packaged "$pascal/2008_002506.jpg" '"defaultCrop": "DEFAULT_CROP_CENTRE"'
add_packaged "$pascal/bald_guys.jpg" ''

echo "== starting a worker"
"$bin" worker >"$out/worker.log" 2>&1 &
worker_pid=$!

echo "== enqueueing $(wc -l <"$jobs") jobs"
mapfile -t ids < <("$bin" enqueue --from "$jobs" --no-progress)
args=(); for id in "${ids[@]}"; do args+=(--job-id "$id"); done

echo "== results"
"$bin" results "${args[@]}" --timeout 180
"$bin" results "${args[@]}" --timeout 60 --json >"$out/results.jsonl"

echo
echo "== worker endpoints (http://127.0.0.1:$AVATAR_HTTP_PORT)"
# Readiness needs the first librdkafka statistics report (every 5 s).
for _ in $(seq 20); do
  curl -sf -o /dev/null "http://127.0.0.1:$AVATAR_HTTP_PORT/readyz" && break
  sleep 0.5
done
curl -s "http://127.0.0.1:$AVATAR_HTTP_PORT/readyz" || true
echo
curl -s "http://127.0.0.1:$AVATAR_HTTP_PORT/metrics" | grep -E '^avatar_jobs_total\{' | grep -v ' 0$' || true

echo
echo "avatars: $(find "$out/store/users" -type f | wc -l) files under out/demo/store/users/ (worker log: out/demo/worker.log)"
"$here/.deps/venv/bin/python" bench/contact_sheet.py "$jobs" "$out/results.jsonl" "$out/store" \
  "$out/contact-sheet.png"
echo "contact sheet: $out/contact-sheet.png"
