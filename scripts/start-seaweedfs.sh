#!/usr/bin/env bash
# Starts SeaweedFS (`weed mini`: master, volume, filer and S3 gateway in one
# process) on 127.0.0.1 with one S3 identity, so SigV4 signatures are checked.
# Usage: start-seaweedfs.sh DATA_DIR S3_PORT   -> prints shell exports for tests.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data=$1; s3_port=$2
weed="$here/.deps/venv/bin/weed"
access=${AVATAR_S3_ACCESS_KEY:-avatartestkey}
secret=${AVATAR_S3_SECRET_KEY:-avatartestsecret0123456789}
bucket=${AVATAR_S3_BUCKET:-avatars}
rm -rf "$data"; mkdir -p "$data"
cat >"$data/s3.json" <<JSON
{"identities":[{"name":"avatar-cropper","credentials":[{"accessKey":"$access","secretKey":"$secret"}],
  "actions":["Admin","Read","Write","List","Tagging"]}]}
JSON
# Port offsets keep the other listeners away from the defaults and from each other.
base=$((s3_port - 100))
nohup "$weed" mini -dir="$data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
  -master.port=$((base + 1)) -volume.port=$((base + 2)) -filer.port=$((base + 3)) \
  -s3.port="$s3_port" -s3.config="$data/s3.json" -webdav=false -admin.ui=false \
  -admin.port=$((base + 4)) -bucket="$bucket" >"$data/weed.log" 2>&1 &
echo $! >"$data/weed.pid"
for ((i = 0; i < 600; i++)); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$s3_port/" || true)
  [ "$code" != "000" ] && [ -n "$code" ] && break
  sleep 0.1
done
[ "${code:-000}" != "000" ] || { echo "seaweedfs: S3 did not answer on 127.0.0.1:$s3_port" >&2; tail -20 "$data/weed.log" >&2; exit 1; }
echo "export AVATAR_TEST_S3_ENDPOINT='http://127.0.0.1:$s3_port'"
echo "export AVATAR_TEST_S3_REGION='us-east-1'"
echo "export AVATAR_TEST_S3_BUCKET='$bucket'"
echo "export AVATAR_TEST_S3_ACCESS_KEY='$access'"
echo "export AVATAR_TEST_S3_SECRET_KEY='$secret'"
