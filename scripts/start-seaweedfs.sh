#!/usr/bin/env bash
# Starts SeaweedFS (`weed mini`: master, volume, filer and S3 gateway in one
# process) on 127.0.0.1 with one S3 identity, so SigV4 signatures are checked.
# Usage: start-seaweedfs.sh DATA_DIR S3_PORT   -> prints shell exports for tests.
# DATA_DIR starts empty, unless AVATAR_S3_KEEP_DATA=1 (a restart on the data of an earlier run).
#
# Every listener is on 127.0.0.1 and on a port derived from S3_PORT (S3_PORT+1 ..
# S3_PORT+8, and the admin HTTP port, see below), so two instances on different S3
# ports never collide. The optional
# Iceberg/Lance catalog listeners (fixed default ports) and WebDAV are off, and so
# is telemetry. Returns only once the gateway accepts a SigV4-signed request, the
# bucket exists and a signed PUT/DELETE round trip works; the pid is in DATA_DIR/weed.pid.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data=$1; s3_port=$2
weed="$here/.deps/venv/bin/weed"
access=${AVATAR_S3_ACCESS_KEY:-avatartestkey}
secret=${AVATAR_S3_SECRET_KEY:-avatartestsecret0123456789}
bucket=${AVATAR_S3_BUCKET:-avatars}
region=us-east-1
if ((s3_port < 1024 || s3_port > 65527)); then
  echo "seaweedfs: S3 port must be in 1024..65527 (ports up to S3_PORT+8 are used)" >&2; exit 2
fi
[ "${AVATAR_S3_KEEP_DATA:-0}" = 1 ] || rm -rf "$data"
mkdir -p "$data"
cat >"$data/s3.json" <<JSON
{"identities":[{"name":"avatar-cropper","credentials":[{"accessKey":"$access","secretKey":"$secret"}],
  "actions":["Admin","Read","Write","List","Tagging"]}]}
JSON
# Without explicit gRPC ports weed uses HTTP port + 10000, which overflows above 55535.
# The built-in maintenance worker ignores -admin.port.grpc and always dials admin port
# + 10000, so the admin server keeps that default: its gRPC lands on S3_PORT+4 and its
# HTTP port moves 10000 below when S3_PORT+4+10000 would not be a port.
admin_grpc=$((s3_port + 4))
admin_http=$((admin_grpc + 10000 <= 65535 ? admin_grpc : admin_grpc - 10000))
nohup "$weed" mini -dir="$data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
  -master.port=$((s3_port + 1)) -master.port.grpc=$((s3_port + 5)) \
  -volume.port=$((s3_port + 2)) -volume.port.grpc=$((s3_port + 6)) \
  -filer.port=$((s3_port + 3)) -filer.port.grpc=$((s3_port + 7)) \
  -s3.port="$s3_port" -s3.port.grpc=$((s3_port + 8)) \
  -admin.port="$admin_http" -admin.port.grpc=$((admin_http + 10000)) -admin.ui=false \
  -s3.port.iceberg=0 -s3.port.lance=0 -webdav=false -master.telemetry=false \
  -s3.config="$data/s3.json" -bucket="$bucket" >>"$data/weed.log" 2>&1 &
pid=$!
echo "$pid" >"$data/weed.pid"

endpoint="http://127.0.0.1:$s3_port"
empty_sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
signed() { # method path payload-sha256 [curl args...] -> prints the HTTP status ("000": no answer)
  # curl 7.88's --aws-sigv4 does not send x-amz-content-sha256 itself; S3 wants it.
  local method=$1 path=$2 sha=$3; shift 3
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X "$method" -H "x-amz-content-sha256: $sha" \
    --aws-sigv4 "aws:amz:$region:s3" --user "$access:$secret" "$@" "$endpoint$path" || true
}
fail() {
  echo "seaweedfs: $1" >&2; tail -20 "$data/weed.log" >&2
  kill "$pid" 2>/dev/null || true
  exit 1
}

# 1. The gateway answers a signed HEAD on the bucket with 200 (signature accepted, bucket there).
ready=""
for ((i = 0; i < 600; i++)); do
  kill -0 "$pid" 2>/dev/null || fail "weed exited during startup"
  code=$(signed HEAD "/$bucket" "$empty_sha256" -I)
  if [ "$code" = 200 ]; then ready=1; break; fi
  # The gateway answers but -bucket has not created the bucket (yet): create it ourselves.
  if [ "$code" = 404 ] && ((i % 20 == 19)); then signed PUT "/$bucket" "$empty_sha256" >/dev/null; fi
  sleep 0.1
done
[ -n "$ready" ] || fail "S3 on 127.0.0.1:$s3_port did not accept a signed request for the bucket within 60 s"

# 2. A signed write reaches a volume (volumes may still be allocating right after startup).
probe="/$bucket/.readiness-probe-$$"
ready=""
for ((i = 0; i < 300; i++)); do
  code=$(signed PUT "$probe" "$(printf ok | sha256sum | cut -d' ' -f1)" -H 'Content-Type: text/plain' \
    --data-binary ok)
  if [ "$code" = 200 ]; then ready=1; break; fi
  sleep 0.1
done
[ -n "$ready" ] || fail "S3 on 127.0.0.1:$s3_port did not accept a signed PUT within 30 s"
signed DELETE "$probe" "$empty_sha256" >/dev/null

# 3. Signatures are really checked: a wrong secret is refused.
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -I -H "x-amz-content-sha256: $empty_sha256" \
  --aws-sigv4 "aws:amz:$region:s3" --user "$access:wrong-$secret" "$endpoint/$bucket" || true)
[ "$code" = 403 ] || fail "S3 accepted a request signed with a wrong secret (HTTP $code)"

echo "export AVATAR_TEST_S3_ENDPOINT='$endpoint'"
echo "export AVATAR_TEST_S3_REGION='$region'"
echo "export AVATAR_TEST_S3_BUCKET='$bucket'"
echo "export AVATAR_TEST_S3_ACCESS_KEY='$access'"
echo "export AVATAR_TEST_S3_SECRET_KEY='$secret'"
