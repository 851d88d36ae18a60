#!/usr/bin/env bash
# `make bench`: the render benchmark (bench/README.md, "Render"; figures in bench/RESULTS.md).
#   avatar-bench (Swift, Imaging module) vs a straightforward and an informed pyvips pipeline vs Pillow, and the
#   floor (a bare libjpeg-turbo region decode, or libheif decoding the crop's tiles, + resize + PNG,
#   bench/floor/floor.c), on the corpus photos plus generated 12, 24 (EXIF 6) and 48 MP photos, and the HEIF
#   set (the corpus's HEICs and AVIF, the HEIC fixture, a generated 20 MP 10-bit AVIF, each with its
#   baseline-JPEG twin), over a mix of editor poses.
# Writes bench/results/raw.jsonl and bench/results/latest.md (both gitignored) and prints the report.
#
#   bench/bench.sh          the render bench above (`make bench`; about 6 minutes)
#   bench/bench.sh tiles    one job in flight (bench/README.md, "One job in flight"; about 3 minutes): each HEIF
#                           image and its JPEG twin, centred, with every tile on the render's own thread, on the
#                           decode cores, and pinned to one CPU (bench/tiles.py); run after the render bench
#
# Environment:
#   BENCH_CONCURRENCY  libvips threads for Swift and pyvips alike (default 1: the worker renders
#                      several jobs at once, one thread each; Pillow is single-threaded anyway)
#   BENCH_RUNS         timed renders per pose and process after one warm-up (default 3; images < 20 MP
#                      run in two processes; BENCH_LARGE_RUNS, default 3, for >= 20 MP in one)
#   BENCH_ONLY         only images whose path contains this string
#   BENCH_SET          heif: only the HEIC/AVIF images and their JPEG twins (a few minutes; to rerun the
#                      HEIF targets after a decoder change)
#   AVATAR_TEST_CORPUS the test images (default ../shared/corpus; when absent, only the HEIF set runs, on
#                      the Tests/Fixtures HEIC)
set -euo pipefail
step=${1:-render}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

python="$here/.deps/venv/bin/python"
corpus="${AVATAR_TEST_CORPUS:-$here/../shared/corpus}"
cache="$here/bench/.cache"
results="$here/bench/results"
concurrency="${BENCH_CONCURRENCY:-1}"

[ -x "$python" ] || { echo "bench: no Python venv at $python (run scripts/dev/install-deps.sh)" >&2; exit 1; }
set_arg="${BENCH_SET:-all}"
if [ ! -d "$corpus" ]; then
  echo "bench: no test corpus at $corpus (set AVATAR_TEST_CORPUS): running the HEIF set on Tests/Fixtures" >&2
  set_arg=heif
fi

echo "bench: building avatar-bench (release)"
swift build --package-path bench -c release --product avatar-bench
bin="$(swift build --package-path bench -c release --show-bin-path)/avatar-bench"

"$python" bench/gen_inputs.py "$corpus" "$cache"

if [ "$step" = tiles ]; then
  mkdir -p "$results"
  "$python" bench/tiles.py --bench-bin "$bin" --corpus "$corpus" --fixtures "$here/Tests/Fixtures" --cache "$cache" \
      --out "$results/tiles.jsonl" | tee "$results/tiles.md"
  echo "bench: figures in bench/results/tiles.jsonl and tiles.md; the current ones are in bench/RESULTS.md"
  exit 0
fi

# The floor: libjpeg-turbo decoding exactly the crop region, or libheif exactly the crop's tiles, + resize + PNG,
# nothing else (bench/floor/floor.c).
echo "bench: building the floor (bench/floor/floor.c)"
mkdir -p "$cache"
cc -O2 -o "$cache/floor" bench/floor/floor.c $(pkg-config --cflags --libs vips libheif) -ljpeg -ldeflate

# The same glibc allocator policy in all three processes: the Swift side caps malloc arenas itself
# (Vips.initialise), the Python references get the same cap through the environment.
export MALLOC_ARENA_MAX=2
rm -rf "$results"
"$python" bench/driver.py --bench-bin "$bin" --floor-bin "$cache/floor" --python "$python" --corpus "$corpus" --cache "$cache" \
    --out "$results" --concurrency "$concurrency" --runs "${BENCH_RUNS:-3}" \
    --large-runs "${BENCH_LARGE_RUNS:-3}" --set "$set_arg" ${BENCH_ONLY:+--only "$BENCH_ONLY"}
"$python" bench/compare.py "$results"
"$python" bench/plots.py "$results"
echo "bench: figures in bench/results/ (report: bench/results/latest.md, raw: raw.jsonl, plots: *.png); the current ones are in bench/RESULTS.md"
