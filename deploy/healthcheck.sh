#!/bin/bash
# Container health check for avatar-cropper: GET a path (default /healthz) on the worker's HTTP port and succeed
# only on HTTP 200. Uses bash's /dev/tcp so the image needs no curl or wget.
#
# The port is http.port as the worker reads it: AVATAR_HTTP_PORT, else an `http.port = N` line in the config file
# named by AVATAR_CONFIG, else 8080. With http.port = 0 the endpoints are off and there is nothing to check.
# The worker must listen on 127.0.0.1 for this to reach it (http.host 0.0.0.0, the default, does).
set -u
path=${1:-/healthz}
port=${AVATAR_HTTP_PORT:-}
if [ -z "$port" ] && [ -n "${AVATAR_CONFIG:-}" ] && [ -r "$AVATAR_CONFIG" ]; then
    port=$(sed -n 's/^[[:space:]]*http\.port[[:space:]]*=[[:space:]]*\([0-9][0-9]*\)[[:space:]]*$/\1/p' \
        "$AVATAR_CONFIG" | tail -n 1)
fi
port=${port:-8080}
[ "$port" = 0 ] && exit 0

if ! { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
    echo "unhealthy: nothing listens on port $port"
    exit 1
fi
printf 'GET %s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: avatar-cropper-healthcheck\r\nConnection: close\r\n\r\n' \
    "$path" >&3
status=""
IFS=' ' read -r -t 4 _ status _ <&3 || true
exec 3<&-
if [ "$status" = 200 ]; then
    exit 0
fi
echo "unhealthy: $path answered '${status:-nothing}'"
exit 1
