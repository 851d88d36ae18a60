#!/usr/bin/env bash
# Regenerates everything derived from proto/ (docs/ARCHITECTURE.md §4). Run after editing a .proto file and
# commit the results:
#   Sources/CropProtocol/Generated/*.pb.swift   Swift messages (swift-protobuf, public)
#   proto/python/avatar/crop/v1/*_pb2.py        Python messages (producers, interop test)
#   proto/descriptor_set.pb                      the compiled schema (tests walk it)
#
#   scripts/dev/generate-proto.sh           regenerate in place
#   scripts/dev/generate-proto.sh --check   regenerate into a temp dir and fail if anything differs
#
# Needs protoc (Debian: protobuf-compiler). The Swift plugin, protoc-gen-swift, is built once
# from the swift-protobuf version this package resolves, into a scratch directory outside the
# repo ($PROTOC_GEN_SWIFT_DIR, default ${TMPDIR:-/tmp}/protoc-gen-swift/<version>), unless
# $PROTOC_GEN_SWIFT points at a binary already. The plugin binary is never committed.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

command -v protoc >/dev/null 2>&1 || {
  echo "generate-proto: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }

# The swift-protobuf version the package resolves: generated code and runtime must match.
swift_protobuf_version() {
  local v=""
  if [ -f Package.resolved ]; then
    v=$(python3 - <<'PY'
import json
pins = json.load(open("Package.resolved")).get("pins", [])
print(next((p["state"].get("version", "") for p in pins if p["identity"] == "swift-protobuf"), ""))
PY
)
  fi
  if [ -z "$v" ] && [ -d .build/checkouts/swift-protobuf ]; then
    v=$(git -C .build/checkouts/swift-protobuf describe --tags --exact-match 2>/dev/null || true)
  fi
  echo "${v:-1.39.0}"
}

plugin="${PROTOC_GEN_SWIFT:-}"
if [ -z "$plugin" ]; then
  version=$(swift_protobuf_version)
  scratch="${PROTOC_GEN_SWIFT_DIR:-${TMPDIR:-/tmp}/protoc-gen-swift/$version}"
  plugin="$scratch/src/.build/release/protoc-gen-swift"
  if [ ! -x "$plugin" ]; then
    echo "generate-proto: building protoc-gen-swift $version in $scratch (a few minutes, once)"
    mkdir -p "$scratch"
    rm -rf "$scratch/src"
    git clone -q -c advice.detachedHead=false --depth 1 --branch "$version" \
      https://github.com/apple/swift-protobuf "$scratch/src"
    (cd "$scratch/src" && swift build -c release --product protoc-gen-swift >"$scratch/build.log" 2>&1) || {
      echo "generate-proto: building protoc-gen-swift failed, see $scratch/build.log" >&2; exit 1; }
  fi
fi

protos=()
while IFS= read -r f; do protos+=("$f"); done < <(cd proto && find avatar -name '*.proto' | LC_ALL=C sort)

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/swift" "$out/python"
(cd proto && protoc -I . \
  --plugin=protoc-gen-swift="$plugin" \
  --swift_out="$out/swift" --swift_opt=Visibility=Public,FileNaming=DropPath \
  --python_out="$out/python" \
  --descriptor_set_out="$out/descriptor_set.pb" --include_imports \
  "${protos[@]}")

if [ "$check" -eq 1 ]; then
  rc=0
  diff -r "$out/swift" Sources/CropProtocol/Generated || rc=1
  diff -r -x __pycache__ "$out/python" proto/python || rc=1
  cmp "$out/descriptor_set.pb" proto/descriptor_set.pb || rc=1
  if [ "$rc" -ne 0 ]; then
    echo "generate-proto: generated files are out of date; run scripts/dev/generate-proto.sh" >&2
  else
    echo "generate-proto: generated files are up to date"
  fi
  exit "$rc"
fi

rm -rf Sources/CropProtocol/Generated proto/python
mkdir -p Sources/CropProtocol/Generated
cp "$out"/swift/*.swift Sources/CropProtocol/Generated/
cp -r "$out/python" proto/python
cp "$out/descriptor_set.pb" proto/descriptor_set.pb
echo "generate-proto: wrote Sources/CropProtocol/Generated, proto/python, proto/descriptor_set.pb"
