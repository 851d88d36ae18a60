-- The worker's role, with only the rights the worker uses.
--
-- The role is NOLOGIN: operators grant LOGIN and a password (or make it a member of a login role), e.g.
--   ALTER ROLE avatar_worker LOGIN PASSWORD '…';
-- Roles are cluster-wide; it is created only when absent (migrations of several schemas may run at once).
-- The grants are on this schema's tables (the current schema), so each schema grants its own.

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'avatar_worker') THEN
        CREATE ROLE avatar_worker NOLOGIN;
    END IF;
EXCEPTION
    -- Another migration created it between the check and CREATE ROLE.
    WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;

DO $$
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO avatar_worker', current_schema());
END
$$;

-- The ledger: look up a job, record it, update a failed attempt.
GRANT SELECT, INSERT, UPDATE ON avatar_crop_jobs TO avatar_worker;

-- Profiles: read and write only the id and the avatar columns; the app's other columns stay invisible.
GRANT SELECT (id, avatar_path, avatar_version, avatar_blurhash, avatar_updated_at, avatar_requested_at)
    ON profiles TO avatar_worker;
GRANT INSERT (id) ON profiles TO avatar_worker;
GRANT UPDATE (avatar_path, avatar_version, avatar_blurhash, avatar_updated_at, avatar_requested_at)
    ON profiles TO avatar_worker;
