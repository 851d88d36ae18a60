#!/usr/bin/env bash
# The data-lifecycle migrations and the prune on a large ledger (README, "The migration on a large ledger"):
# fills avatar_crop_jobs of a schema of its own on the test Postgres with ROWS rows (default 3,000,000: a million
# users with three jobs each over 30 days, each profile at its newest version), then measures
#   1. migration 0007 (a table, functions, grants: no scan of the ledger);
#   2. migration 0008 (CREATE INDEX CONCURRENTLY) while a writer inserts a ledger row every 50 ms: its time, and
#      the longest writer iteration (insert + 50 ms sleep);
#   3. the same index built in a transaction under the same writer: its time, and the longest writer iteration;
#   4. one avatar_prune batch of 1,000 rows (five batches: min-max), then `avatar-cropper prune` with the
#      default retention (336 h) to the end: its time and the rows it deleted.
# Postgres is whatever AVATAR_TEST_DATABASE_URL names (scripts/services.sh's temp cluster: fsync off, so writes
# are faster than on a durable server); the schema is dropped at the end.
#
#   bench/bench-large-ledger.sh [ROWS]     (BENCH_BIN: a folder holding avatar-cropper; default: swift build's)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
rows=${1:-3000000}
export PKG_CONFIG_PATH="$here/.deps/librdkafka/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
bin=${BENCH_BIN:-$(swift build --show-bin-path)}
[ -x "$bin/avatar-cropper" ] || swift build --product avatar-cropper 2>&1 | tail -1

own_services=0
if [ ! -f .run/env ] || ! grep -q AVATAR_TEST_DATABASE_URL .run/env; then
  scripts/services.sh start postgres >/dev/null
  own_services=1
fi
set -a; source .run/env; set +a
url=$AVATAR_TEST_DATABASE_URL
export AVATAR_DATABASE_TOMBSTONE_KEY=$AVATAR_TEST_TOMBSTONE_KEY
schema=bench_ledger_$$
work=$(mktemp -d)
writer_pid=""
cleanup() {
  [ -n "$writer_pid" ] && { kill "$writer_pid" 2>/dev/null || true; wait "$writer_pid" 2>/dev/null || true; }
  psql -q "$url" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
  rm -rf "$work"
  if [ "$own_services" = 1 ]; then scripts/services.sh stop >/dev/null; fi
}
trap cleanup EXIT

sql() { psql -X -q -v ON_ERROR_STOP=1 "$url" -c "SET search_path = $schema" "$@"; }
value() { psql -X -q -t -A -v ON_ERROR_STOP=1 "$url" -c "SET search_path = $schema" -c "$1" | tail -1; }
seconds() { python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.2f}")' "$@"; }
now() { date +%s.%N; }
# Applies migrations/0001 … NNNN (a folder of copies: migrate applies every file of its folder).
migrate_to() {
  mkdir -p "$work/m$1"
  for file in migrations/*.sql; do
    n=$(basename "$file" | cut -c1-4)
    if ((10#$n <= $1)); then cp "$file" "$work/m$1/"; fi
  done
  AVATAR_DATABASE_URL=$url AVATAR_DATABASE_SCHEMA=$schema AVATAR_DATABASE_MIGRATIONS_DIR="$work/m$1" \
    AVATAR_LOG_LEVEL=error "$bin/avatar-cropper" migrate >/dev/null
}
# A writer like a worker's: one ledger row per iteration, committed, then 50 ms of sleep; each iteration's time in
# bench_writer. Runs until bench_stop holds a row.
start_writer() {
  sql -c "TRUNCATE bench_writer; TRUNCATE bench_stop" >/dev/null
  psql -X -q "$url" -c "SET search_path = $schema" -c "
    DO \$\$
    DECLARE started timestamptz; i bigint := 0;
    BEGIN
      LOOP
        EXIT WHEN EXISTS (SELECT FROM bench_stop);
        i := i + 1;
        started := clock_timestamp();
        INSERT INTO avatar_crop_jobs (job_id, user_id, status, requested_at, avatar_version, finished_at)
        VALUES ('writer-' || txid_current() || '-' || i, gen_random_uuid(), 'failed', now(), NULL, now());
        COMMIT;
        PERFORM pg_sleep(0.05);
        INSERT INTO bench_writer VALUES (clock_timestamp() - started);
        COMMIT;
      END LOOP;
    END
    \$\$" >/dev/null &
  writer_pid=$!
  sleep 1
}
stop_writer() {
  sql -c "INSERT INTO bench_stop VALUES (1)" >/dev/null
  wait "$writer_pid"
  writer_pid=""
  value "SELECT round(extract(epoch FROM max(took)) * 1000) || ' ms over ' || count(*) || ' iterations' FROM bench_writer"
}

psql -X -q -v ON_ERROR_STOP=1 "$url" -c "CREATE SCHEMA $schema"
migrate_to 6
echo "filling avatar_crop_jobs with $rows rows ($schema)…"
fill_start=$(now)
users=$((rows / 3))
sql -c "
  INSERT INTO profiles (id, avatar_path, avatar_version, avatar_requested_at, avatar_updated_at)
  SELECT md5('u' || u)::uuid, 'users/' || md5('u' || u)::uuid || '/avatar_512.png', 3, now() - interval '1 day',
         now() - interval '1 day'
    FROM generate_series(1, $users) u;
  INSERT INTO avatar_crop_jobs (job_id, user_id, status, requested_at, avatar_version, avatar_path, attempts,
                                avatar_sha256, rendition_paths, finished_at)
  SELECT 'job-' || g, md5('u' || (g % $users + 1))::uuid, 'succeeded', t, g / $users + 1,
         'users/' || md5('u' || (g % $users + 1))::uuid || '/avatar_512.png', 1, md5(g::text) || md5(g::text),
         ARRAY['users/' || md5('u' || (g % $users + 1))::uuid || '/avatar_80.png'], t
    FROM generate_series(0, $rows - 1) g,
         LATERAL (SELECT now() - interval '30 days' + (g::float8 / $rows) * interval '30 days' AS t) times;
  ANALYZE avatar_crop_jobs; ANALYZE profiles;
  CREATE UNLOGGED TABLE bench_writer (took interval);
  CREATE UNLOGGED TABLE bench_stop (x int);" >/dev/null
size=$(value "SELECT pg_size_pretty(pg_total_relation_size('avatar_crop_jobs'))")
echo "filled in $(seconds "$fill_start" "$(now)") s: $(value "SELECT count(*) FROM avatar_crop_jobs") rows, $size"

t0=$(now); migrate_to 7; t1=$(now)
echo "0007 (table, functions, grants): $(seconds "$t0" "$t1") s"

start_writer
t0=$(now); migrate_to 8; t1=$(now)
echo "0008 (CREATE INDEX CONCURRENTLY) under a writer every 50 ms: $(seconds "$t0" "$t1") s;" \
  "longest writer iteration: $(stop_writer)"

sql -c "DROP INDEX avatar_crop_jobs_finished_idx" >/dev/null
start_writer
t0=$(now)
sql -c "BEGIN; CREATE INDEX avatar_crop_jobs_finished_idx ON avatar_crop_jobs (finished_at); COMMIT;" >/dev/null
t1=$(now)
echo "the same index in a transaction under the same writer: $(seconds "$t0" "$t1") s;" \
  "longest writer iteration: $(stop_writer)"

migrate_to 9999
sql -c "ANALYZE avatar_crop_jobs" >/dev/null
batches=()
for _ in 1 2 3 4 5; do
  t0=$(now)
  value "SELECT avatar_prune(now() - interval '336 hours', 1000)" >/dev/null
  batches+=("$(seconds "$t0" "$(now)")")
done
echo "one avatar_prune batch of 1,000 rows: $(printf '%s\n' "${batches[@]}" | sort -n | head -1)–$(printf '%s\n' "${batches[@]}" | sort -n | tail -1) s (5 batches)"

t0=$(now)
pruned=$(AVATAR_DATABASE_URL=$url AVATAR_DATABASE_SCHEMA=$schema AVATAR_LOG_LEVEL=error \
  AVATAR_LEDGER_RETENTION_HOURS=336 "$bin/avatar-cropper" prune)
t1=$(now)
echo "avatar-cropper prune (retention 336 h, batches of 1,000): $(seconds "$t0" "$t1") s, $pruned;" \
  "$(value "SELECT count(*) FROM avatar_crop_jobs") rows left"
