-- Data has a lifecycle (docs/ARCHITECTURE.md §4): ledger retention and forgetting a user.
--
-- Nothing here rewrites or scans avatar_crop_jobs: a new table, two functions and grants, so the migration takes
-- no lock on the ledger beyond the catalog's. The index the prune walks is built by 0008, concurrently.

-- Users forgotten by `avatar-cropper forget` or a forget request: the user id and the newest requested_at the forget
-- erased, nothing else. A crop request of the user with requested_at up to forgotten_at is superseded and publishes
-- nothing (a message the forget erased cannot bring an avatar back); a later request starts again from version 1.
-- A row is pruned with the ledger, once it is older than the retention (no message that old can come back).
CREATE TABLE IF NOT EXISTS avatar_forgotten_users (
    user_id uuid PRIMARY KEY,
    forgotten_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);

-- Forgets a user in one transaction (the call's own), under the user's advisory lock taken by the caller: records
-- the tombstone (forgotten_at = the newest of p_requested_at, the profile's avatar_requested_at and the erased
-- rows' requested_at), deletes the user's ledger rows, and resets the profile's avatar columns — or deletes the
-- profile row when `profiles` is the table migration 0001 created (no column but its own), as no app owns it.
-- Returns the ledger rows deleted.
CREATE OR REPLACE FUNCTION avatar_forget(p_user_id uuid, p_requested_at timestamptz) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    erased bigint;
    newest timestamptz;
    own_table boolean;
BEGIN
    WITH gone AS (DELETE FROM avatar_crop_jobs WHERE user_id = p_user_id RETURNING requested_at)
    SELECT count(*), max(requested_at) INTO erased, newest FROM gone;
    SELECT greatest(p_requested_at, newest, max(avatar_requested_at)) INTO newest
      FROM profiles WHERE id = p_user_id;
    INSERT INTO avatar_forgotten_users AS f (user_id, forgotten_at, recorded_at)
    VALUES (p_user_id, newest, now())
    ON CONFLICT (user_id) DO UPDATE
       SET forgotten_at = greatest(f.forgotten_at, EXCLUDED.forgotten_at), recorded_at = now();
    SELECT NOT EXISTS (
        SELECT FROM pg_catalog.pg_attribute
         WHERE attrelid = 'profiles'::regclass AND attnum > 0 AND NOT attisdropped
           AND attname NOT IN ('id', 'created_at', 'avatar_path', 'avatar_version', 'avatar_blurhash',
                               'avatar_updated_at', 'avatar_requested_at')) INTO own_table;
    IF own_table THEN
        DELETE FROM profiles WHERE id = p_user_id;
    ELSE
        UPDATE profiles
           SET avatar_path = NULL, avatar_version = 0, avatar_blurhash = NULL, avatar_updated_at = NULL,
               avatar_requested_at = NULL
         WHERE id = p_user_id;
    END IF;
    RETURN erased;
END
$$;

-- Deletes at most p_batch ledger rows last written before p_cutoff, oldest first, keeping every row a guarantee
-- still needs: the succeeded row behind a profile's current version (a redelivery of the current version is
-- recognised by it) and a row being rendered right now. Then as many tombstones recorded before p_cutoff. Returns
-- the ledger rows deleted; the caller repeats while a batch comes back full. Walks avatar_crop_jobs_finished_idx.
CREATE OR REPLACE FUNCTION avatar_prune(p_cutoff timestamptz, p_batch int4) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    pruned bigint;
BEGIN
    WITH doomed AS (
        SELECT j.job_id FROM avatar_crop_jobs j
         WHERE j.finished_at < p_cutoff
           AND (j.status <> 'started' OR j.started_at < p_cutoff)
           AND NOT (j.status = 'succeeded' AND EXISTS (
                SELECT FROM profiles p WHERE p.id = j.user_id AND p.avatar_version = j.avatar_version))
         ORDER BY j.finished_at
         LIMIT p_batch
         FOR UPDATE OF j SKIP LOCKED),
    gone AS (DELETE FROM avatar_crop_jobs j USING doomed d WHERE j.job_id = d.job_id RETURNING 1)
    SELECT count(*) INTO pruned FROM gone;
    DELETE FROM avatar_forgotten_users
     WHERE user_id IN (SELECT user_id FROM avatar_forgotten_users WHERE recorded_at < p_cutoff LIMIT p_batch);
    RETURN pruned;
END
$$;

-- Both functions run with their search_path pinned, as migration 0006 pins 0005's (docs/ARCHITECTURE.md §7): their
-- own schema (the one the migrations run in, which the files never name), then pg_catalog, then pg_temp last, so a
-- caller's temporary table named like the ledger, `profiles` or the tombstones cannot stand in for the real one.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION avatar_forget(uuid, timestamptz) SET search_path = %I, pg_catalog, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION avatar_prune(timestamptz, int4) SET search_path = %I, pg_catalog, pg_temp',
                   current_schema());
END
$$;

-- The worker forgets (forget requests) and prunes (worker.prune-interval-minutes): it deletes ledger rows and
-- reads and writes the tombstones. Deleting a profile row is granted only when `profiles` is the table 0001
-- created, never on an app's own table.
GRANT DELETE ON avatar_crop_jobs TO avatar_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON avatar_forgotten_users TO avatar_worker;
DO $$
BEGIN
    IF NOT EXISTS (
        SELECT FROM pg_catalog.pg_attribute
         WHERE attrelid = 'profiles'::regclass AND attnum > 0 AND NOT attisdropped
           AND attname NOT IN ('id', 'created_at', 'avatar_path', 'avatar_version', 'avatar_blurhash',
                               'avatar_updated_at', 'avatar_requested_at')) THEN
        GRANT DELETE ON profiles TO avatar_worker;
    END IF;
END
$$;
GRANT EXECUTE ON FUNCTION avatar_forget(uuid, timestamptz) TO avatar_worker;
GRANT EXECUTE ON FUNCTION avatar_prune(timestamptz, int4) TO avatar_worker;
