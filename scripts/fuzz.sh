#!/usr/bin/env bash
# The native fuzz harnesses (Tests/Fuzz/README.md): libFuzzer with AddressSanitizer and
# UndefinedBehaviorSanitizer over the C that reads uploads (Sources/C/CJPEGRegion, Sources/C/CHEIFRegion),
# built with the Swift toolchain's clang against the system libjpeg-turbo and libheif.
#
#   scripts/fuzz.sh build         build every harness (.build-fuzz/)
#   scripts/fuzz.sh regressions   replay Tests/Fixtures/fuzz-regressions/ and the seeds once (seconds)
#   scripts/fuzz.sh smoke         regressions, then each harness for FUZZ_SECONDS (60) from the seeds,
#                                 fixed random seed: what `make test` runs
#   scripts/fuzz.sh run           each harness for FUZZ_SECONDS (default 600) on .build-fuzz/corpus/,
#                                 which keeps growing across runs (seeds, fixtures, AVATAR_TEST_CORPUS)
#   scripts/fuzz.sh coverage      line coverage of each C file over that corpus (llvm-cov)
#   scripts/fuzz.sh memcheck      the corpus under valgrind's memcheck (no MSan: see the README)
#
# FUZZ_HARNESSES picks harnesses (default "jpeg heif"); FUZZ_JOBS runs that many harnesses at once (1);
# FUZZ_TIMEOUT is the seconds one input may take (30; more on a machine busy with other work, where a
# niced fuzzer waits long for a core).
# A crash, leak, UB report or timeout fails the command, with the input saved in
# .build-fuzz/artifacts/HARNESS/ (minimise it with -minimize_crash=1, then add it to the regressions).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build-fuzz
harnesses=(${FUZZ_HARNESSES:-jpeg heif})
swift_bin=$(dirname "$(readlink -f "$(command -v "${SWIFT:-swift}")")")
cc=${FUZZ_CC:-$swift_bin/clang}
[ -x "$cc" ] || { echo "fuzz: no clang beside the Swift toolchain ($cc); set FUZZ_CC" >&2; exit 1; }
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$swift_bin/llvm-symbolizer}
# Leaks are reported (libFuzzer's -detect_leaks, on by default); UB stops the run.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

module() { case $1 in jpeg) echo CJPEGRegion ;; heif) echo CHEIFRegion ;; esac; }
libraries() { case $1 in jpeg) pkg-config --cflags --libs libjpeg ;; heif) pkg-config --cflags --libs libheif; echo -lm -pthread ;; esac; }
sources() { local m; m=$(module "$1"); echo "-ISources/C/$m/include -ITests/Fuzz Tests/Fuzz/$1_region_fuzzer.c $(ls Sources/C/"$m"/*.c | tr '\n' ' ')"; }

build_one() { # harness, variant
  local h=$1 variant=$2 flags binary
  case $variant in
    fuzz) flags="-O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"; binary=$out/${h}_fuzzer ;;
    # DWARF 4: Debian 12's valgrind (3.19) cannot read clang 21's default DWARF 5.
    replay) flags="-O1 -gdwarf-4 Tests/Fuzz/replay_main.c"; binary=$out/${h}_replay ;;
    coverage) flags="-O0 -fprofile-instr-generate -fcoverage-mapping Tests/Fuzz/replay_main.c"; binary=$out/${h}_coverage ;;
  esac
  # Rebuilt only when a source is newer than the binary.
  local newer
  newer=$(find Tests/Fuzz Sources/C/"$(module "$h")" -newer "$binary" -name '*.[ch]' 2>/dev/null | head -1) || true
  if [ ! -x "$binary" ] || [ -n "$newer" ]; then
    # shellcheck disable=SC2046
    "$cc" -g -fno-omit-frame-pointer -fuse-ld=lld $flags $(sources "$h") $(libraries "$h") -o "$binary"
  fi
}

build() { mkdir -p "$out"; for h in "${harnesses[@]}"; do build_one "$h" "${1:-fuzz}"; done; }

# Writes each file under the folders given into DIR with the harness's parameter prefix in front
# (Tests/Fuzz/fuzz_parameters.h): a few requests per file, so every seed starts whole, zoomed, shrunk.
prefixed() { # harness, dir, folders...
  local h=$1 dir=$2; shift 2
  mkdir -p "$dir"
  local pattern='\.(jpe?g)$'
  [ "$h" = heif ] && pattern='\.(heic|heif|avif)$'
  local prefixes=('\x00\x00\x00\x00\x00\x00\x00\x00' '\x01\x02\xff\x80\x80\x00\x00\x00' '\x0e\x05\x60\x30\xc0\x00\x00\x00')
  # Files up to 256 KB: a 12 MP photo costs a hundred small seeds' time on every run that picks it.
  find "$@" -type f -size -256k 2>/dev/null | grep -iE "$pattern" | while read -r file; do
    local i=0
    for prefix in "${prefixes[@]}"; do
      { printf "$prefix"; cat "$file"; } >"$dir/$(basename "$file").$i"
      i=$((i + 1))
    done
  done
}

# The harness's regression inputs, if it has any (git keeps no empty folder; a missing one fails the replay).
regression_folder() { [ ! -d "Tests/Fixtures/fuzz-regressions/$1" ] || echo "Tests/Fixtures/fuzz-regressions/$1"; }

regressions() {
  build fuzz
  local status=0
  for h in "${harnesses[@]}"; do
    # One folder (libFuzzer takes files or folders, not both): the regression inputs and the seeds.
    local replay=$out/replay/$h count
    rm -rf "$replay"
    prefixed "$h" "$replay" "Tests/Fuzz/seeds/$h"
    cp Tests/Fixtures/fuzz-regressions/"$h"/* "$replay/" 2>/dev/null || true
    count=0  # a harness with no regression yet has no folder (git keeps no empty one)
    [ ! -d "Tests/Fixtures/fuzz-regressions/$h" ] || count=$(find "Tests/Fixtures/fuzz-regressions/$h" -type f | wc -l)
    echo "fuzz: $h: replaying $count regression inputs and the seeds"
    "$out/${h}_fuzzer" -runs=0 "$replay" >"$out/$h-regressions.log" 2>&1 ||
      { tail -n 40 "$out/$h-regressions.log"; echo "fuzz: $h: a regression input fails"; status=1; }
  done
  return $status
}

fuzz_one() { # harness, corpus dir, seconds, extra flags...
  local h=$1 corpus=$2 seconds=$3; shift 3
  local artifacts=$out/artifacts/$h/
  mkdir -p "$artifacts"
  local log=$out/$h-${log_tag:-fuzz}.log max_len=131072
  [ "$h" = heif ] && max_len=262144
  echo "fuzz: $h for ${seconds}s (log $log)"
  if nice -n "${FUZZ_NICE:-19}" "$out/${h}_fuzzer" "$corpus" -dict="Tests/Fuzz/$h.dict" -max_total_time="$seconds" \
      -timeout="${FUZZ_TIMEOUT:-30}" -rss_limit_mb=2560 -max_len="$max_len" -print_final_stats=1 \
      -artifact_prefix="$artifacts" "$@" >"$log" 2>&1; then
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|cov: .* ft: ' "$log" | tail -n 3 | sed "s/^/fuzz: $h: /"
  else
    tail -n 60 "$log"
    echo "fuzz: $h: FAILED (input in $artifacts)"
    return 1
  fi
}

fuzz_all() { # seconds, corpus root, extra flags...
  local seconds=$1 root=$2; shift 2
  local status=0 pids=() jobs=${FUZZ_JOBS:-1}
  for h in "${harnesses[@]}"; do
    fuzz_one "$h" "$root/$h" "$seconds" "$@" &
    pids+=($!)
    if [ "${#pids[@]}" -ge "$jobs" ]; then wait "${pids[0]}" || status=1; pids=("${pids[@]:1}"); fi
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  return $status
}

case ${1:-} in
  build) build fuzz; build replay; build coverage ;;
  regressions) regressions ;;
  smoke)
    regressions
    # A fresh corpus from the seeds and the regression inputs, the same random seed every time: what a
    # change does to code the seeds reach, not luck. A crash here is a real one (its input is kept).
    rm -rf "$out/smoke"
    for h in "${harnesses[@]}"; do
      prefixed "$h" "$out/smoke/$h" "Tests/Fuzz/seeds/$h"
      cp Tests/Fixtures/fuzz-regressions/"$h"/* "$out/smoke/$h/" 2>/dev/null || true
    done
    log_tag=smoke fuzz_all "${FUZZ_SECONDS:-60}" "$out/smoke" -seed=1
    ;;
  run)
    build fuzz
    for h in "${harnesses[@]}"; do
      # The seeds again each time (same names: a new seed joins, nothing else changes). HEIF gets the photos only
      # with FUZZ_PHOTO_SEEDS=1: each is a whole HEVC decode, and with them the harness ran 23 inputs/s instead
      # of ~2,000 on the tiny grids and tiles of Tests/Fuzz/seeds/heif, which reach the same code of ours.
      photos=(Tests/Fixtures ${AVATAR_TEST_CORPUS:+"$AVATAR_TEST_CORPUS"})
      [ "$h" = jpeg ] || [ "${FUZZ_PHOTO_SEEDS:-0}" = 1 ] || photos=()
      prefixed "$h" "$out/corpus/$h" "Tests/Fuzz/seeds/$h" "${photos[@]}"
      cp Tests/Fixtures/fuzz-regressions/"$h"/* "$out/corpus/$h/" 2>/dev/null || true
    done
    fuzz_all "${FUZZ_SECONDS:-600}" "$out/corpus"
    ;;
  coverage)
    build coverage
    for h in "${harnesses[@]}"; do
      m=$(module "$h")
      rm -f "$out/$h".profraw
      LLVM_PROFILE_FILE="$out/$h.profraw" nice -n "${FUZZ_NICE:-19}" "$out/${h}_coverage" "$out/corpus/$h" $(regression_folder "$h") 2>/dev/null
      "$swift_bin/llvm-profdata" merge -sparse "$out/$h.profraw" -o "$out/$h.profdata"
      # Every C file of the module (CJPEGRegion has its DC preview apart).
      # shellcheck disable=SC2046
      "$swift_bin/llvm-cov" report "$out/${h}_coverage" -instr-profile="$out/$h.profdata" $(ls Sources/C/"$m"/*.c)
    done
    ;;
  memcheck)
    build replay
    command -v valgrind >/dev/null || { echo "fuzz: valgrind is not installed (make deps)" >&2; exit 1; }
    for h in "${harnesses[@]}"; do
      echo "fuzz: $h: the corpus under memcheck (log $out/$h-memcheck.log)"
      # Exit 99: memcheck's errors (an input that vanished while a fuzzer minimised the corpus is not one).
      rc=0
      nice -n "${FUZZ_NICE:-19}" valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
        --track-origins=yes --suppressions=Tests/Fuzz/memcheck.supp "$out/${h}_replay" "$out/corpus/$h" $(regression_folder "$h") \
        >"$out/$h-memcheck.log" 2>&1 || rc=$?
      [ "$rc" -ne 99 ] || { tail -n 40 "$out/$h-memcheck.log"; echo "fuzz: $h: memcheck found errors"; exit 1; }
      # "suppressed": the library bugs of Tests/Fuzz/memcheck.supp (docs/UPSTREAM-BUGS.md), counted, not failed.
      grep -E 'ERROR SUMMARY|definitely lost|replayed' "$out/$h-memcheck.log" | sed "s/^/fuzz: $h: /"
    done
    ;;
  *) sed -n '2,19p' "$0" >&2; exit 2 ;;
esac
