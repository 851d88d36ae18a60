# Sourced (not run) by the end-to-end steps that can also run alone, bench/bench-rebalance.sh and
# bench/bench-tracing.sh, with $work set: outside bench/bench-e2e.sh (no AVATAR_DATABASE_URL) it starts
# Postgres and the broker under $work/run and sets own_services=1, so the caller stops them; then it exports the
# worker settings every end-to-end step uses.
own_services=0
if [ -z "${AVATAR_DATABASE_URL:-}" ]; then
  export AVATAR_RUN_DIR="$work/run"
  export AVATAR_PG_PORT=${AVATAR_PG_PORT:-56532} AVATAR_KAFKA_PORT=${AVATAR_KAFKA_PORT:-59492}
  scripts/services.sh start postgres kafka
  own_services=1
  set -a; source "$AVATAR_RUN_DIR/env"; set +a
  export AVATAR_DATABASE_URL="$AVATAR_TEST_DATABASE_URL" AVATAR_KAFKA_BROKERS="$AVATAR_TEST_KAFKA_BROKERS"
  export AVATAR_DATABASE_TOMBSTONE_KEY="$AVATAR_TEST_TOMBSTONE_KEY"
fi
export AVATAR_STORAGE_URL=${AVATAR_STORAGE_URL:-file://$work/store} AVATAR_LOG_LEVEL=${AVATAR_LOG_LEVEL:-warning}
export AVATAR_KAFKA_PROPERTY_SESSION_TIMEOUT_MS=${AVATAR_KAFKA_PROPERTY_SESSION_TIMEOUT_MS:-6000} AVATAR_HTTP_PORT=0
