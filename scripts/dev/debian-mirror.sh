#!/usr/bin/env bash
# Prints the machine's own Debian mirror (the first non-security URI in its apt configuration: deb822
# sources first, then the classic lists), so the scripts that need a suite the machine does not list
# (scripts/dev/build-librdkafka.sh, scripts/dev/install-libheif.sh) fetch it from the same place as everything else.
# Exits 1 with a message when there is none.
set -euo pipefail

mirror=$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null \
          | awk '{print $2}' | grep -v -- '-security' | head -n1 || true)
if [ -z "$mirror" ]; then
  mirror=$(grep -hsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
            | awk '{print $2}' | grep -v -- '-security' | head -n1 || true)
fi
[ -n "$mirror" ] || { echo "cannot find a Debian mirror in /etc/apt" >&2; exit 1; }
echo "$mirror"
