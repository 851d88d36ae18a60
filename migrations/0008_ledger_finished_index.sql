-- avatar-cropper: no-transaction
-- The index the ledger's prune walks (avatar_prune, migration 0007), built without blocking the workers' writes
-- (docs/ARCHITECTURE.md §4). CREATE INDEX CONCURRENTLY cannot run in a transaction, so this file runs statement by
-- statement, under the migrator's session lock (Migration.runsInTransaction). A build that failed half-way leaves
-- an INVALID index of this name: it is dropped first, so running the file again builds it afresh.
DROP INDEX CONCURRENTLY IF EXISTS avatar_crop_jobs_finished_idx;
CREATE INDEX CONCURRENTLY avatar_crop_jobs_finished_idx ON avatar_crop_jobs (finished_at);
