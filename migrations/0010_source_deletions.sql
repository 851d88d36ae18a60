-- Deferred deletion of source photos (`storage.delete-source = after-success`, docs/ARCHITECTURE.md §4).
--
-- A job done with its source does not delete it at once: a re-crop of the same upload (a second request naming the
-- same source_key, right after the first or after its result) must still find it. The job records the key here,
-- due `storage.delete-source-delay-seconds` later; a job that starts on a key already recorded pushes its due time
-- out again, and a worker's sweep deletes the sources whose time has come, then their rows. The key, the user it
-- belongs to and its due time, nothing else about the job. The user id is there for the forget guarantee
-- (migration 0009, docs/ARCHITECTURE.md §4): a forget makes the user's pending deletions due at once, and a
-- request the user's tombstone covers records its key due at once, so the next sweep deletes the upload and the
-- row. A new table; nothing else is touched.
CREATE TABLE IF NOT EXISTS avatar_source_deletions (
    source_key text PRIMARY KEY,
    user_id uuid NOT NULL,
    due_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS avatar_source_deletions_due_idx ON avatar_source_deletions (due_at);
CREATE INDEX IF NOT EXISTS avatar_source_deletions_user_idx ON avatar_source_deletions (user_id);

GRANT SELECT, INSERT, UPDATE, DELETE ON avatar_source_deletions TO avatar_worker;
