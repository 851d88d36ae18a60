-- The user's lock and the publishing transaction as one call each (DESIGN §3).
--
-- A publication used to take eight round trips to Postgres for these two steps: set lock_timeout, take the
-- advisory lock, reset lock_timeout, then BEGIN, create the profile row, bump it, record the job, COMMIT. Each
-- round trip wakes a backend and blocks a worker thread, on the same cores that render. These functions do the
-- same statements server-side in one call each. Both are SECURITY INVOKER: they run with the caller's rights
-- (avatar_worker's grants of 0003), and resolve tables through the caller's search_path like every other
-- statement of the worker.
--
-- The previous release does not call them, so this migration leaves it working.

-- Waits at most timeout_ms for the session advisory lock (namespace, key). lock_timeout is set for this call's
-- statement only (set_config is_local inside the call's own transaction): the session's lock_timeout is as it was
-- afterwards. Past the timeout: SQLSTATE 55P03 (lock_not_available), as a plain pg_advisory_lock would raise.
CREATE OR REPLACE FUNCTION avatar_lock_user(namespace int4, key int4, timeout_ms int4) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_catalog.set_config('lock_timeout', timeout_ms::text || 'ms', true);
    PERFORM pg_catalog.pg_advisory_lock(namespace, key);
END
$$;

-- Publishes version expected + 1 of a user's avatar in one transaction (the call's own): creates the profile row
-- when the app has none, bumps avatar_version from `expected` (unless a newer request is published), and records
-- the job as succeeded with the SHA-256 of the published bytes. Returns the new version. Nothing is written when
-- it raises:
--   AV001  the profile is not at `expected` or a newer request is published (the version moved under the lock);
--   AV002  the job's ledger row already says succeeded, or belongs to another user.
CREATE OR REPLACE FUNCTION avatar_publish(
    p_job_id text, p_user_id uuid, p_requested_at timestamptz, p_expected bigint, p_path text,
    p_rendition_paths text[], p_sha256 text, p_blurhash text
) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    published bigint;
BEGIN
    INSERT INTO profiles (id) VALUES (p_user_id) ON CONFLICT (id) DO NOTHING;
    UPDATE profiles
       SET avatar_path = p_path, avatar_version = avatar_version + 1, avatar_blurhash = p_blurhash,
           avatar_updated_at = now(), avatar_requested_at = p_requested_at
     WHERE id = p_user_id AND avatar_version = p_expected
       AND (avatar_requested_at IS NULL OR avatar_requested_at <= p_requested_at)
    RETURNING avatar_version INTO published;
    IF published IS NULL THEN
        RAISE EXCEPTION 'the avatar version moved from %', p_expected USING ERRCODE = 'AV001';
    END IF;
    INSERT INTO avatar_crop_jobs AS j
        (job_id, user_id, status, requested_at, avatar_version, avatar_path, avatar_sha256, rendition_paths,
         attempts, render_attempts, finished_at)
    VALUES (p_job_id, p_user_id, 'succeeded', p_requested_at, published, p_path, p_sha256, p_rendition_paths,
            1, 0, now())
    ON CONFLICT (job_id) DO UPDATE
       SET status = 'succeeded', avatar_version = EXCLUDED.avatar_version, avatar_path = EXCLUDED.avatar_path,
           avatar_sha256 = EXCLUDED.avatar_sha256, rendition_paths = EXCLUDED.rendition_paths, error_code = NULL,
           render_attempts = 0, finished_at = now()
     WHERE j.user_id = EXCLUDED.user_id AND j.status <> 'succeeded';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the job is already succeeded or is another user''s' USING ERRCODE = 'AV002';
    END IF;
    RETURN published;
END
$$;

-- Functions are executable by PUBLIC unless revoked; the worker's role is granted them by name all the same, as it
-- is granted everything else it uses.
GRANT EXECUTE ON FUNCTION avatar_lock_user(int4, int4, int4) TO avatar_worker;
GRANT EXECUTE ON FUNCTION avatar_publish(text, uuid, timestamptz, bigint, text, text[], text, text) TO avatar_worker;
