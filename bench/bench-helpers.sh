#!/usr/bin/env bash
# The render helpers' cost (bench/README.md, "Render helpers"; the sandboxed-render
# issue's targets): `avatar-bench helpers` renders the same photos as a worker's jobs would, once in its own
# process and once through a pool of render helpers, each mode in a fresh process, the modes alternating
# BENCH_HELPER_ROUNDS times (default 5) so the machine's drift falls on both. Photos: a 640 px JPEG, the repo's
# iPhone HEIC fixture and a generated 12 MP JPEG; the corpus' 12 MP Galaxy S7 JPEG and iOS 18 HEIC when present.
# Both modes load the face model and warm up as a worker does by default. The helpers run avatar-bench itself (its
# hidden `render-helper`), as a worker's helpers run the worker's own binary: pages of the one binary are shared.
# It ends job by job (`--mode paired`), against today's in-process render.
# Writes bench/results/helpers.jsonl (gitignored) and prints the comparison (bench/helpers_report.py).
#   BENCH_HELPER_SLOTS  render slots, threads busy at full load (default 2: the worker's default on 2 cores)
#   BENCH_HELPER_PAIRS  jobs of each mode in the job-by-job comparison that ends the run (default 100)
#   BENCH_HELPER_LOAD_SECONDS  how long each whole run keeps every slot busy, per photo (default 6; the default of
#                       `avatar-bench helpers`, 24 jobs, lasts under a second on the small photos)
set -euo pipefail
source "$(dirname "$0")/bench-env.sh"
rounds=${BENCH_HELPER_ROUNDS:-5}
slots=${BENCH_HELPER_SLOTS:-2}
pairs=${BENCH_HELPER_PAIRS:-100}
load_seconds=${BENCH_HELPER_LOAD_SECONDS:-6}
cache="$here/bench/.cache"
mkdir -p "$results" "$cache"

echo "bench-helpers: building avatar-bench (release)"
swift build --package-path bench -c release --product avatar-bench 2>&1 | { grep -E "error|Compiling|complete" || true; } | tail -2
bin="$(swift build --package-path bench -c release --show-bin-path)"
scripts/fetch-face-model.sh "$bin" >/dev/null  # beside the helper binary, where the worker finds it (--faces)

helper_images
image_args=("${helper_image_args[@]}")

out="$results/helpers.jsonl"
: >"$out"
for round in $(seq 1 "$rounds"); do
  modes=(in-process helpers)
  [ $((round % 2)) -eq 0 ] && modes=(helpers in-process)
  for mode in "${modes[@]}"; do
    echo "bench-helpers: round $round/$rounds, $mode"
    "$bin/avatar-bench" helpers --mode "$mode" --helper-binary "$bin/avatar-bench" --slots "$slots" \
      --full-load-seconds "$load_seconds" --faces "${image_args[@]}" | sed "s/^{/{\"round\":$round,/" >>"$out"
  done
done
# Job by job: an in-process job and a helper job in turn in one process, so the machine's drift falls on both.
echo "bench-helpers: job by job, $pairs pairs per photo"
"$bin/avatar-bench" helpers --mode paired --helper-binary "$bin/avatar-bench" --slots "$slots" --rounds "$pairs" \
  --faces "${image_args[@]}" >>"$out"
"$python" bench/helpers_report.py "$out"
