# Sourced (not run) by the render benches that build avatar-bench (bench/bench-faces.sh, bench/bench-formats.sh,
# bench/bench-helpers.sh, bench/bench-helpers-ab.sh): the repository as the working directory ($here), librdkafka's pkg-config path, the
# venv's Python ($python), the test photos ($corpus: AVATAR_TEST_CORPUS, default ../shared/corpus) and
# bench/results ($results, made).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
export PKG_CONFIG_PATH="$here/.deps/librdkafka/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
python="$here/.deps/venv/bin/python"
corpus="${AVATAR_TEST_CORPUS:-$here/../shared/corpus}"
results="$here/bench/results"
mkdir -p "$results"

# The render helpers' photos (bench-helpers.sh, bench-helpers-ab.sh), into $helper_image_args (--image PATH …): the
# 640 px JPEG first (its render is short, so what a helper adds per job stands out of the machine's noise), the repo's
# iPhone HEIC fixture, a generated 12 MP JPEG, and the corpus' 12 MP Galaxy S7 JPEG and iOS 18 HEIC when present.
helper_images() {
  local cache="$here/bench/.cache" jpeg12 photo image
  mkdir -p "$cache"
  local images=(Tests/Fixtures/size/craft-beer_640x640.jpg Tests/Fixtures/formats/heic_iphone-7-plus_1008x756.heic)
  jpeg12="$cache/generated_12mp.jpg"
  [ -f "$jpeg12" ] || "$python" - "$jpeg12" <<'PY'
import sys, pyvips
noise = pyvips.Image.gaussnoise(500, 375, sigma=40, mean=128, seed=12)
rgb = noise.bandjoin([noise.rot180(), noise.flip("horizontal")]).cast("uchar").resize(8, kernel="linear")
rgb.copy(interpretation="srgb").write_to_file(sys.argv[1], Q=85)
PY
  images+=("$jpeg12")
  for photo in camera/phone_samsung-galaxy-s7-edge_12mp_gps.jpg formats/heic_iphone-ios18_tmap-gainmap_4284x5712.heic; do
    [ ! -f "$corpus/$photo" ] || images+=("$corpus/$photo")
  done
  helper_image_args=()
  for image in "${images[@]}"; do helper_image_args+=(--image "$image"); done
}
