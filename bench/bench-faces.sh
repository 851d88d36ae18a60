#!/usr/bin/env bash
# The face rule's cost (bench/README.md, "Face rule"): `avatar-bench faces` renders
# each photo without a pose with the face rule and with the centred default, interleaved in one process on one
# libvips thread, BENCH_FACE_ROUNDS rounds (default 5) of BENCH_FACE_RUNS renders (default 3) each; it also
# times the model's load and the memory it adds. Photos: the render bench's corpus photos and HEICs when present, the
# repo's iPhone HEIC, and python3-skimage's astronaut and a dlib PASCAL group photo when installed.
# Writes bench/results/faces.jsonl (gitignored) and prints the comparison (bench/faces_report.py).
set -euo pipefail
source "$(dirname "$0")/bench-env.sh"
config=${BENCH_FACE_CONFIG:-release}

echo "bench-faces: building avatar-bench ($config)"
swift build --package-path bench -c "$config" --product avatar-bench 2>&1 | { grep -E "error|complete" || true; } | tail -2
bin="$(swift build --package-path bench -c "$config" --show-bin-path)"
scripts/fetch-face-model.sh >/dev/null

images=(Tests/Fixtures/formats/heic_iphone-7-plus_1008x756.heic)
# The render bench's photos (bench/driver.py) that the corpus holds, then its HEICs.
for photo in camera/phone_samsung-galaxy-s7-edge_12mp_gps.jpg camera/phone_iphone-4s_8mp_orientation-6.jpg \
  camera/phone_iphone-6-plus_8mp_gps.jpg camera/phone_samsung-galaxy-s4_9.6mp.jpg \
  camera/dslr_nikon-d3100_14mp_big-exif.jpg camera/pd_craft-beer_24mp_progressive.jpg \
  colour/p3_displayp3-v4_craft-beer.jpg colour/adobergb_canon-t6_xmp_test.jpg orientation/Landscape_6.jpg \
  panorama/equirect_pannellum_4096x2048.jpg formats/webp_lossy_gallery-4_1024x772.webp \
  formats/heic_iphone-7-plus_Example1.heic formats/heic_iphone-ios18_tmap-gainmap_4284x5712.heic; do
  [ ! -f "$corpus/$photo" ] || images+=("$corpus/$photo")
done
for photo in /usr/lib/python3/dist-packages/skimage/data/astronaut.png \
  /usr/share/doc/libdlib19.1/examples/faces/bald_guys.jpg; do
  [ ! -f "$photo" ] || images+=("$photo")
done
args=()
for image in "${images[@]}"; do args+=(--image "$image"); done
# Three small photos, one per canvas shape of the detector (square, landscape, portrait): its memory figure, and a
# backfill's mix of canvases with one network kept (as a render helper) against every one.
cache="$here/bench/.cache/faces"
mkdir -p "$cache"
"$python" - "$cache" <<'PY'
import sys
import pyvips
for name, (width, height) in {"square": (640, 640), "landscape": (640, 480), "portrait": (480, 640)}.items():
    gradient = pyvips.Image.xyz(width, height)[0] * (255 / width)
    gradient.bandjoin([gradient, gradient]).cast("uchar").jpegsave(f"{sys.argv[1]}/canvas-{name}.jpg", Q=90)
PY
for name in square landscape portrait; do args+=(--canvas-image "$cache/canvas-$name.jpg"); done

"$bin/avatar-bench" faces --model .deps/models/face_detection_yunet_2023mar.onnx \
  --rounds "${BENCH_FACE_ROUNDS:-5}" --runs "${BENCH_FACE_RUNS:-3}" "${args[@]}" >"$results/faces.jsonl"
"$python" bench/faces_report.py "$results/faces.jsonl" "$config"
