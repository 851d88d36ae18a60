#!/usr/bin/env bash
# One change to the render helpers, before against after (bench/README.md, "Render helpers, two builds"):
# `avatar-bench helpers --mode helpers` of two builds, alternating BENCH_AB_ROUNDS times (default 3, the order
# reversed every other round), each run a fresh process running its own build's helpers as a worker does (two render
# slots and a spare, the face model loaded). Per photo: the lone job's median wall time, the CPU of the whole process
# tree per lone job (helpers' starts included), full-load jobs/s (over BENCH_AB_LOAD_SECONDS, default 6, and at least
# 24 jobs); per run the whole worker's peak PSS. Photos: those of
# bench-helpers.sh (bench-env.sh, `helper_images`).
#   bench/bench-helpers-ab.sh BEFORE_BIN [AFTER_BIN]
# BEFORE_BIN and AFTER_BIN are avatar-bench binaries (a release build of the commit before the change, e.g. from a
# `git worktree`; AFTER_BIN defaults to this tree's). Writes bench/results/helpers-ab.jsonl and prints the comparison.
set -euo pipefail
source "$(dirname "$0")/bench-env.sh"
before=${1:?usage: bench/bench-helpers-ab.sh BEFORE_BIN [AFTER_BIN]}
after=${2:-}
if [ -z "$after" ]; then
  swift build --package-path bench -c release --product avatar-bench 2>&1 | { grep -E "error|complete" || true; } | tail -1
  after="$(swift build --package-path bench -c release --show-bin-path)/avatar-bench"
fi
for bin in "$before" "$after"; do
  scripts/fetch-face-model.sh "$(dirname "$bin")" >/dev/null
  # A build whose bench predates the option would ignore it and time 24 jobs: not the same measurement.
  if ! { "$bin" helpers 2>&1 || true; } | grep -q -- --full-load-seconds; then
    echo "bench-helpers-ab: $bin has no --full-load-seconds (bench/README.md, \"Render helpers, two builds\")" >&2
    exit 2
  fi
done
helper_images
args=("${helper_image_args[@]}")
out="$results/helpers-ab.jsonl"
: >"$out"
rounds=${BENCH_AB_ROUNDS:-3}
for round in $(seq 1 "$rounds"); do
  builds=(before after)
  [ $((round % 2)) -eq 0 ] && builds=(after before)
  for build in "${builds[@]}"; do
    bin=$before; [ "$build" = after ] && bin=$after
    echo "bench-helpers-ab: round $round/$rounds, $build"
    "$bin" helpers --mode helpers --helper-binary "$bin" --slots 2 --faces \
      --full-load-seconds "${BENCH_AB_LOAD_SECONDS:-6}" "${args[@]}" |
      sed "s/^{/{\"round\":$round,\"build\":\"$build\",/" >>"$out"
  done
done
"$python" bench/helpers_ab_report.py "$out"
