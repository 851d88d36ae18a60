-- Deferred deletion of source photos (`storage.delete-source = after-success`, docs/ARCHITECTURE.md §4).
--
-- A job done with its source does not delete it at once: a re-crop of the same upload (a second request naming the
-- same source_key, right after the first or after its result) must still find it. The job records the key here,
-- due `storage.delete-source-delay-seconds` later; a job that starts on a key already recorded pushes its due time
-- out again, and a worker's sweep deletes the sources whose time has come, then their rows. Only the key and its
-- due time: no user id, nothing else about the job. A new table; nothing else is touched.
CREATE TABLE IF NOT EXISTS avatar_source_deletions (
    source_key text PRIMARY KEY,
    due_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS avatar_source_deletions_due_idx ON avatar_source_deletions (due_at);

GRANT SELECT, INSERT, UPDATE, DELETE ON avatar_source_deletions TO avatar_worker;
