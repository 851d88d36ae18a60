#!/usr/bin/env bash
# The avatar formats (docs/FORMATS.md, bench/RESULTS.md, "Avatar formats"): `avatar-bench formats` renders each photo's 512²
# avatar in every format on one libvips thread (one core, as a render slot), BENCH_FORMAT_RUNS times (default 7):
# per format the bytes and the encode's CPU time on the render's thread; then BENCH_FORMAT_ROUNDS rounds (default 6)
# of a PNG-only job against a PNG + WebP + AVIF at 512 and WebP at 128 one, interleaved, whole render CPU. The
# renditions of each photo are saved, and bench/formats_report.py adds each format's SSIM against the PNG and a
# contact sheet (bench/results/formats-sheet.png: each photo's PNG, JPEG, WebP and AVIF side by side).
# BENCH_FORMAT_ARGS passes encoder settings (e.g. "--avif-speed 6 --avif-quality 55") to compare with the defaults.
# Photos: the render bench's corpus photos when present, and the repo's fixtures.
# Writes bench/results/formats.jsonl (gitignored) and prints the report.
set -euo pipefail
source "$(dirname "$0")/bench-env.sh"
config=${BENCH_FORMAT_CONFIG:-release}
saved="$results/formats"
rm -rf "$saved"; mkdir -p "$saved"

echo "bench-formats: building avatar-bench ($config)"
swift build --package-path bench -c "$config" --product avatar-bench 2>&1 | { grep -E "error|complete" || true; } | tail -2
bin="$(swift build --package-path bench -c "$config" --show-bin-path)"

images=(Tests/Fixtures/formats/heic_iphone-7-plus_1008x756.heic Tests/Fixtures/formats/webp_lossy_gallery-4_1024x772.webp
        Tests/Fixtures/orientation/Landscape_6.jpg Tests/Fixtures/colour/p3_displayp3-v4_craft-beer.jpg)
for photo in camera/phone_samsung-galaxy-s7-edge_12mp_gps.jpg camera/phone_iphone-4s_8mp_orientation-6.jpg \
  camera/phone_iphone-6-plus_8mp_gps.jpg camera/phone_samsung-galaxy-s4_9.6mp.jpg \
  camera/dslr_nikon-d3100_14mp_big-exif.jpg camera/pd_craft-beer_24mp_progressive.jpg \
  colour/adobergb_canon-t6_xmp_test.jpg formats/heic_iphone-7-plus_Example1.heic; do
  [ ! -f "$corpus/$photo" ] || images+=("$corpus/$photo")
done
args=()
for image in "${images[@]}"; do args+=(--image "$image"); done
read -r -a extra <<<"${BENCH_FORMAT_ARGS:-}"
"$bin/avatar-bench" formats "${args[@]}" --runs "${BENCH_FORMAT_RUNS:-7}" --rounds "${BENCH_FORMAT_ROUNDS:-6}" \
  --save "$saved" "${extra[@]}" >"$results/formats.jsonl"
"$python" bench/formats_report.py "$results/formats.jsonl" "$saved" "$results/formats-sheet.png"
