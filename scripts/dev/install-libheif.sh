#!/usr/bin/env bash
# Installs libheif >= 1.19 and the decoder plugins the worker uses, when the system's libheif is older.
#
# Why: iPhones running iOS 18 or later save every HEIC with an ISO gain map (a `tmap` derived item that
# shares auxiliary images with the primary one); Debian 12's libheif 1.15 refuses those files with
# "Too many auxiliary image references", libheif 1.18 fixed it, and 1.19 brings the tile API the HEIF region
# decoder reads (heif_image_handle_get_image_tiling, heif_image_handle_decode_image_tile). libvips links
# libheif.so.1 and so gets the newer library too. docs/DEVELOPMENT.md ("What `make` installs") links here.
#
# Usage: scripts/dev/install-libheif.sh [--runtime]
#   default    libheif1 + libheif-dev (headers: the HEIF decoder and bench/floor build against them;
#              libvips-dev depends on libheif-dev too) + the plugins
#   --runtime  libheif1 + the plugins only (deploy/Dockerfile's runtime stage)
# The plugins: libde265 for HEVC (HEIC) and dav1d for AV1 (AVIF), chosen by measurement over ffmpeg and
# aom (bench/RESULTS.md, "HEIF decoders"); libheif1 itself requires both packages' kinds. aomenc is the AV1
# encoder the AVIF avatars are written with (docs/FORMATS.md), at the speed `image.avif-speed` sets.
#
# When libheif1 is older than 1.19 (or a wanted package is missing), the packages come from the machine's
# own Debian mirror's `<codename>-backports` suite (Debian 12: bookworm-backports, libheif 1.19.7), through
# a temporary source list, package lists and pin that touch nothing else: the pin lets only libheif's own
# packages come from backports; every dependency comes from the machine's configured suites. Idempotent:
# nothing happens when everything is already installed at >= 1.19.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
want_min="1.19"
packages=(libheif1 libheif-plugin-libde265 libheif-plugin-dav1d libheif-plugin-aomenc)
[ "${1:-}" = "--runtime" ] || packages+=(libheif-dev)

installed() { dpkg-query -W -f='${db:Status-Abbrev} ${Version}\n' "$1" 2>/dev/null | awk '$1 == "ii" {print $2}'; }

current=$(installed libheif1 || true)
missing=()
for p in "${packages[@]}"; do
  # libheif's packages depend on each other at exactly the same version.
  [ -n "$current" ] && [ "$(installed "$p" || true)" = "$current" ] || missing+=("$p")
done
if [ -n "$current" ] && dpkg --compare-versions "$current" ge "$want_min" && [ ${#missing[@]} -eq 0 ]; then
  echo "libheif: $current installed (${packages[*]}), nothing to do"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || { echo "libheif: cannot tell the Debian release from /etc/os-release" >&2; exit 1; }
suite="${LIBHEIF_SUITE:-$codename-backports}"
mirror=$("$here/scripts/dev/debian-mirror.sh") || { echo "libheif: no Debian mirror to install from" >&2; exit 1; }

work=$(mktemp -d)
trap '$sudo rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/parts" "$work/preferences"
# The machine's own sources (dependencies, security updates) plus the backports suite, in lists of our own.
for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && cp "$f" "$work/parts/"
done
echo "deb $mirror $suite main" > "$work/parts/libheif-backports.list"
for f in /etc/apt/preferences.d/*; do
  [ -f "$f" ] && cp "$f" "$work/preferences/"
done
cat > "$work/preferences/libheif-backports.pref" <<EOF
Package: libheif1 libheif-dev libheif-plugin-*
Pin: release n=$suite
Pin-Priority: 990

Package: *
Pin: release n=$suite
Pin-Priority: -1
EOF
apt_opts=(-o "Dir::Etc::SourceParts=$work/parts" -o "Dir::State::Lists=$work/lists"
          -o "Dir::Etc::PreferencesParts=$work/preferences" -o "APT::Get::List-Cleanup=0"
          -o "APT::Sandbox::User=root")

echo "libheif: ${current:-not installed}; installing ${packages[*]} from $suite"
$sudo apt-get "${apt_opts[@]}" update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive $sudo apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends \
  "${packages[@]}" >/dev/null

current=$(installed libheif1 || true)
if [ -z "$current" ] || ! dpkg --compare-versions "$current" ge "$want_min"; then
  echo "libheif: $suite did not provide libheif >= $want_min (have ${current:-none})" >&2
  exit 1
fi
echo "libheif: installed $current"
