#!/usr/bin/env bash
# One job in flight (bench/README.md, "One job in flight"; figures in bench/RESULTS.md): each HEIF image and its
# JPEG twin, centred, with every tile on the render's own thread, on the decode cores, and pinned to one CPU
# (bench/tiles.py). About 3 minutes. Run after bench/bench.sh, which generates the inputs into bench/.cache.
#   AVATAR_TEST_CORPUS  the test images (default ../shared/corpus; without it, the Tests/Fixtures HEIC only)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

python="$here/.deps/venv/bin/python"
corpus="${AVATAR_TEST_CORPUS:-$here/../shared/corpus}"
cache="$here/bench/.cache"
results="$here/bench/results"
[ -x "$python" ] || { echo "bench-tiles: no Python venv at $python (run scripts/dev/install-deps.sh)" >&2; exit 1; }

echo "bench-tiles: building avatar-bench (release)"
swift build --package-path bench -c release --product avatar-bench
bin="$(swift build --package-path bench -c release --show-bin-path)/avatar-bench"
"$python" bench/gen_inputs.py "$corpus" "$cache"

mkdir -p "$results"
"$python" bench/tiles.py --bench-bin "$bin" --corpus "$corpus" --fixtures "$here/Tests/Fixtures" --cache "$cache" \
    --out "$results/tiles.jsonl" | tee "$results/tiles.md"
echo "bench-tiles: figures in bench/results/tiles.jsonl and tiles.md; the current ones are in bench/RESULTS.md"
