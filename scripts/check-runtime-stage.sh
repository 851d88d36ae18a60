#!/usr/bin/env bash
# Proves deploy/Dockerfile's runtime stage without Docker: its packages installed into a `debootstrap
# --variant=minbase bookworm` root twice, with and without the stand-in for Mesa's GLX library
# (deploy/no-gpu-stack, installed first as the Dockerfile does), each root's size measured; the slim root must hold
# no Mesa, LLVM or z3 package, and the face detector must work in it: `avatar-cropper crop` with the face rule, run
# chrooted as the image's uid (10001) on a photo with a face, must find the face and use the face rule's square.
#
#   scripts/check-runtime-stage.sh [BIN_DIR [WORK_DIR]]
#     BIN_DIR   the built avatar-cropper and its face model (default: swift build --show-bin-path); a debug build
#               links Swift's runtime dynamically, so its libraries are copied into /usr/local/lib (the image's
#               release build links them statically: --static-swift-stdlib)
#     WORK_DIR  where the roots go (default .run/runtime-stage; the debootstrap'ed base is kept and reused)
# Needs root (debootstrap, chroot, mount) and the packages debootstrap and dpkg-dev (scripts/dev/install-deps.sh).
# The package list is read from the Dockerfile's runtime stage, so the check follows it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bin=${1:-$(swift build --show-bin-path)}
work=${2:-$here/.run/runtime-stage}
mirror=$(scripts/dev/debian-mirror.sh)
photo=${CHECK_FACE_PHOTO:-/usr/lib/python3/dist-packages/skimage/data/astronaut.png}
[ "$(id -u)" -eq 0 ] || { echo "check-runtime-stage: needs root (debootstrap, chroot)" >&2; exit 1; }
[ -x "$bin/avatar-cropper" ] || { echo "check-runtime-stage: no $bin/avatar-cropper" >&2; exit 1; }
[ -f "$photo" ] || { echo "check-runtime-stage: no photo with a face at $photo (python3-skimage)" >&2; exit 1; }

# The runtime stage's apt-get install list: the words after `--no-install-recommends` up to the next `&&`.
packages=$(awk '/^FROM .* AS runtime/ {runtime = 1} runtime' deploy/Dockerfile |
  awk '/apt-get -q install -y --no-install-recommends/ {take = 1; next} take && /&&/ {exit} take' |
  tr -d '\\' | xargs)
[ -n "$packages" ] || { echo "check-runtime-stage: no package list found in deploy/Dockerfile" >&2; exit 1; }

mkdir -p "$work"
if [ ! -x "$work/base/usr/bin/apt-get" ]; then
  echo "check-runtime-stage: debootstrap --variant=minbase bookworm (a few minutes, once)"
  rm -rf "$work/base"
  debootstrap --variant=minbase bookworm "$work/base" "$mirror" >"$work/debootstrap.log" 2>&1
fi

mounted=()
cleanup() { for m in "${mounted[@]}"; do umount "$m" 2>/dev/null || true; done; }
trap cleanup EXIT

# install ROOT SLIM: the runtime stage's RUN, chrooted.
install_stage() {
  local root=$1 slim=$2
  rm -rf "$root"
  cp -a "$work/base" "$root"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mount -t proc proc "$root/proc"; mounted+=("$root/proc")
  mkdir -p "$root/tmp/install/scripts"
  mkdir -p "$root/tmp/install/scripts/dev"; cp scripts/dev/debian-mirror.sh scripts/dev/install-libheif.sh "$root/tmp/install/scripts/dev/"
  cp -r deploy/no-gpu-stack "$root/tmp/install/no-gpu-stack"
  local stand_in=":"
  [ "$slim" = 1 ] && stand_in="dpkg-deb --build /tmp/install/no-gpu-stack /tmp/install/no-gpu-stack.deb >/dev/null \
    && dpkg -i /tmp/install/no-gpu-stack.deb >/dev/null"
  chroot "$root" /bin/bash -c "set -e; export DEBIAN_FRONTEND=noninteractive; $stand_in
    /tmp/install/scripts/dev/install-libheif.sh --runtime
    rm -rf /tmp/install
    apt-get -q update >/dev/null
    apt-get -q install -y --no-install-recommends $packages >/dev/null
    apt-get clean; rm -rf /var/lib/apt/lists/*" >"$root.log" 2>&1 ||
    { echo "check-runtime-stage: installing into $root failed:"; tail -20 "$root.log"; exit 1; } >&2
  umount "$root/proc"
}

echo "check-runtime-stage: the runtime stage as Debian resolves it (with Mesa) and with the stand-in"
install_stage "$work/with-mesa" 0
install_stage "$work/slim" 1
size() { du -sxm "$1" | cut -f1; }
base=$(size "$work/base"); full=$(size "$work/with-mesa"); slim=$(size "$work/slim")
echo "check-runtime-stage: packages over the minbase root ($base MB): $((full - base)) MB with Mesa," \
  "$((slim - base)) MB without ($((full - slim)) MB less)"

gpu=$(chroot "$work/slim" dpkg-query -W -f='${Package}\n' | grep -E '^(libgl1-mesa-dri|libglx-mesa0|libllvm|libz3|mesa-)' || true)
[ -z "$gpu" ] || { echo "check-runtime-stage: FAIL: the slim root holds $gpu" >&2; exit 1; }
echo "check-runtime-stage: no Mesa, LLVM or z3 package in the slim root"

# The binary, its face model and (debug build) Swift's runtime, then a crop with the face rule as uid 10001.
root=$work/slim
mkdir -p "$root/usr/local/bin" "$root/check"
cp "$bin/avatar-cropper" "$root/usr/local/bin/"
cp "$bin"/face_detection_yunet_*.onnx "$root/usr/local/bin/"
swift_libs=$(ldd "$bin/avatar-cropper" | awk '$3 ~ /\/swift\// {print $3}')
# Where the dynamic linker looks by default (the render helpers start with an empty environment).
[ -z "$swift_libs" ] || { cp $swift_libs "$root/usr/local/lib/"; chroot "$root" ldconfig; }
cp "$photo" "$root/check/photo.${photo##*.}"
chmod 0777 "$root/check"
mount -t proc proc "$root/proc"; mounted+=("$root/proc")
missing=$(chroot "$root" ldd /usr/local/bin/avatar-cropper | grep "not found" || true)
[ -z "$missing" ] || { echo "check-runtime-stage: FAIL: libraries missing in the slim root: $missing" >&2; exit 1; }
report=$(chroot --userspec=10001:10001 "$root" env HOME=/check \
  /usr/local/bin/avatar-cropper crop "/check/photo.${photo##*.}" -o /check/avatar.png --default face --json) ||
  { echo "check-runtime-stage: FAIL: crop failed in the slim root: $report" >&2; exit 1; }
echo "$report" | python3 -c '
import json, sys
report = json.load(sys.stdin)
faces, error = report.get("faces", []), report.get("face_error")
if not faces or not report.get("face_rule_used"):
    sys.exit(f"check-runtime-stage: FAIL: no face found in the slim root: faces {faces}, error {error}")
best = max(face["score"] for face in faces)
print(f"check-runtime-stage: the face detector works in the slim root as uid 10001: {len(faces)} face(s), "
      f"best score {best:.2f}, the face rule square used")'
echo "check-runtime-stage: PASS"
