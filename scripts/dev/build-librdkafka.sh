#!/usr/bin/env bash
# Builds librdkafka from Debian's next-release source package into a local
# prefix when the system's librdkafka is older than 2.2 (Debian 12 ships 2.0.2,
# which cannot parse some brokers' ApiVersion replies and has since-fixed bugs).
#
# Usage: scripts/dev/build-librdkafka.sh [PREFIX]     (default: .deps/librdkafka)
# Prints nothing but progress; afterwards PKG_CONFIG_PATH=PREFIX/lib/pkgconfig.
# The source comes from the machine's own Debian mirror (read from its apt
# configuration), through a temporary source list that touches nothing else.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
prefix=${1:-$here/.deps/librdkafka}
want_min="2.2.0"
suite=${LIBRDKAFKA_SUITE:-trixie}
# The version the build must produce: the suite's source package moves with Debian's point releases, so a
# different upstream version fails the build instead of silently changing the image (override to upgrade).
want_version=${LIBRDKAFKA_VERSION:-2.8.0}

ver_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

if [ -f "$prefix/lib/pkgconfig/rdkafka.pc" ]; then
  echo "librdkafka: using $(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --modversion rdkafka) in $prefix"
  exit 0
fi
if pkg-config --exists rdkafka 2>/dev/null && ver_ge "$(pkg-config --modversion rdkafka)" "$want_min"; then
  echo "librdkafka: system provides $(pkg-config --modversion rdkafka), nothing to build"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

mirror=$("$here/scripts/dev/debian-mirror.sh") || { echo "librdkafka: no Debian mirror to fetch the source from" >&2; exit 1; }

need=()
for p in dpkg-dev build-essential libssl-dev libsasl2-dev zlib1g-dev libzstd-dev liblz4-dev pkg-config python3; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/parts"
echo "deb-src $mirror $suite main" > "$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/parts"
          -o "Dir::State::Lists=$work/lists" -o "APT::Get::List-Cleanup=0" -o "APT::Sandbox::User=root")
echo "librdkafka: fetching the $suite source package"
apt-get "${apt_opts[@]}" update -qq >/dev/null
(cd "$work" && apt-get "${apt_opts[@]}" source -qq --download-only librdkafka >/dev/null)
got_version=$(sed -n 's/^Version: *//p' "$work"/librdkafka_*.dsc | head -n1)
case "$got_version" in
  "$want_version"|"$want_version"-*) ;;
  *) echo "librdkafka: $suite has source version $got_version, expected $want_version (set LIBRDKAFKA_VERSION)" >&2
     exit 1 ;;
esac
(cd "$work" && dpkg-source -x --no-check ./librdkafka_*.dsc src >/dev/null)

echo "librdkafka: building into $prefix"
cd "$work/src"
./configure --prefix="$prefix" --disable-curl --disable-gssapi --enable-ssl --enable-sasl \
  --enable-zstd --enable-lz4-ext --disable-debug-symbols >/dev/null
make -j"$(nproc)" libs >/dev/null 2>&1
make install-subdirs >/dev/null 2>&1 || make -C src install >/dev/null
[ -f "$prefix/lib/pkgconfig/rdkafka.pc" ] || { echo "librdkafka: install produced no rdkafka.pc" >&2; exit 1; }
# Link the local build statically so binaries and test bundles need no
# LD_LIBRARY_PATH: drop the shared objects and spell out the private libraries.
rm -f "$prefix"/lib/librdkafka*.so* "$prefix"/lib/librdkafka++* "$prefix"/lib/pkgconfig/rdkafka++*.pc
sed -i -e 's|^Libs: .*|Libs: -L${libdir} -lrdkafka -lssl -lcrypto -lsasl2 -lzstd -llz4 -lz -lm -ldl -lpthread -lrt|' \
       -e '/^Requires.private:/d' -e '/^Libs.private:/d' "$prefix/lib/pkgconfig/rdkafka.pc"
built=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --modversion rdkafka)
[ "$built" = "$want_version" ] || { echo "librdkafka: built $built, expected $want_version" >&2; exit 1; }
echo "librdkafka: built $built"
