-- The forget guarantee (docs/ARCHITECTURE.md §4, "Forgetting"): after a forget returns, no ledger row or profile
-- value of the user exists, and no message requested before the forget writes one again, whatever the retention,
-- replays, redeliveries, crashes and lost connections.
--
-- Nothing here scans or rewrites avatar_crop_jobs: functions and grants only.
--
-- 1. Tombstones are no longer pruned. A message requested before a forget can come back for as long as the broker
--    keeps it, and a failed job's DLQ record, replayed, is a new message with the requests topic's retention again
--    (and fails back into the DLQ with the DLQ's): no finite retention bounds it. A tombstone is the user id and two
--    times; it is what keeps the erasure true.
-- 2. A job's start (avatar_start) and its failure or supersession (avatar_record) take the user's lock for their
--    transaction and write nothing for a request a tombstone covers: a job that passed its precheck before the forget
--    and fails after it leaves no row. The lock orders them with avatar_forget, which runs under the same lock.
-- 3. Requests are ordered by (requested_at, job_id), not requested_at alone: two jobs with the same requested_at
--    cannot both publish, whichever rows are pruned (the current version's row, which names its job, is never pruned).

-- The user's publication lock key (UserPublication.lockKey): the user id's 16 bytes folded to 32 bits by XOR of its
-- four big-endian words, as a signed int4.
CREATE OR REPLACE FUNCTION avatar_user_lock_key(p_user_id uuid) RETURNS int4
LANGUAGE sql IMMUTABLE AS $$
    SELECT (('x' || substr(h, 1, 8))::bit(32) # ('x' || substr(h, 9, 8))::bit(32)
            # ('x' || substr(h, 17, 8))::bit(32) # ('x' || substr(h, 25, 8))::bit(32))::int4
      FROM (SELECT replace(p_user_id::text, '-', '') AS h) AS hex
$$;

-- Whether a forget of the user covers a request made at p_requested_at.
CREATE OR REPLACE FUNCTION avatar_forgotten(p_user_id uuid, p_requested_at timestamptz) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT FROM avatar_forgotten_users WHERE user_id = p_user_id AND forgotten_at >= p_requested_at)
$$;

-- Takes the user's lock for the calling transaction (the lock avatar_forget runs under, so the two are ordered); when
-- a forget covers the request, deletes the job's row, if any, and returns true.
CREATE OR REPLACE FUNCTION avatar_job_forgotten(p_job_id text, p_user_id uuid, p_requested_at timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_catalog.pg_advisory_xact_lock(1635148148, avatar_user_lock_key(p_user_id));
    IF NOT avatar_forgotten(p_user_id, p_requested_at) THEN
        RETURN false;
    END IF;
    DELETE FROM avatar_crop_jobs WHERE job_id = p_job_id AND user_id = p_user_id;
    RETURN true;
END
$$;

-- Records that a render of the job starts (AvatarLedger.markStarted): returns the render attempt, or NULL when the
-- job is not this call's to render (another user's job id, already succeeded, or the user forgotten since the
-- request: then the job's row, if any, is deleted).
CREATE OR REPLACE FUNCTION avatar_start(p_job_id text, p_user_id uuid, p_requested_at timestamptz) RETURNS int4
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    attempt int4;
BEGIN
    IF avatar_job_forgotten(p_job_id, p_user_id, p_requested_at) THEN
        RETURN NULL;
    END IF;
    INSERT INTO avatar_crop_jobs AS j (job_id, user_id, status, requested_at, render_attempts, started_at)
    VALUES (p_job_id, p_user_id, 'started', p_requested_at, 1, now())
    ON CONFLICT (job_id) DO UPDATE
       SET render_attempts = CASE WHEN j.status = 'started' THEN j.render_attempts + 1 ELSE 1 END,
           status = 'started', started_at = now()
     WHERE j.user_id = EXCLUDED.user_id AND j.status <> 'succeeded'
    RETURNING render_attempts INTO attempt;
    RETURN attempt;
END
$$;

-- Records a job's outcome other than a publication ('failed' or 'superseded'; AvatarLedger.record): never over a
-- success or another user's row, and nothing for a request a forget covers (its row, if any, is deleted). Returns
-- the row's first_failed_at (NULL when nothing was written or it has none).
CREATE OR REPLACE FUNCTION avatar_record(
    p_job_id text, p_user_id uuid, p_requested_at timestamptz, p_status text, p_error_code text, p_attempts int4,
    p_first_failed_at timestamptz
) RETURNS timestamptz
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    first_failed timestamptz;
BEGIN
    IF avatar_job_forgotten(p_job_id, p_user_id, p_requested_at) THEN
        RETURN NULL;
    END IF;
    INSERT INTO avatar_crop_jobs AS j
        (job_id, user_id, status, requested_at, error_code, attempts, first_failed_at, render_attempts, finished_at)
    VALUES (p_job_id, p_user_id, p_status, p_requested_at, p_error_code, p_attempts, p_first_failed_at, 0, now())
    ON CONFLICT (job_id) DO UPDATE
       SET status = EXCLUDED.status, error_code = EXCLUDED.error_code, attempts = EXCLUDED.attempts,
           first_failed_at = COALESCE(j.first_failed_at, EXCLUDED.first_failed_at),
           render_attempts = 0, finished_at = now()
     WHERE j.status <> 'succeeded' AND j.user_id = EXCLUDED.user_id
    RETURNING first_failed_at INTO first_failed;
    RETURN first_failed;
END
$$;

-- avatar_publish (0005) again, with two more rules; same signature and errors, plus:
--   AV003  a forget of the user covers the request (the caller lost the user's lock, or writes without it).
-- A request publishes only when (requested_at, job_id) is after the current version's (job ids compared bytewise):
-- of two jobs with the same requested_at one wins, and the other stays superseded however often it comes back.
CREATE OR REPLACE FUNCTION avatar_publish(
    p_job_id text, p_user_id uuid, p_requested_at timestamptz, p_expected bigint, p_path text,
    p_rendition_paths text[], p_sha256 text, p_blurhash text
) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    published bigint;
    current_job text;
BEGIN
    IF avatar_forgotten(p_user_id, p_requested_at) THEN
        RAISE EXCEPTION 'the user was forgotten after this request' USING ERRCODE = 'AV003';
    END IF;
    -- Said before the order is judged: the current job itself is not after itself.
    IF EXISTS (SELECT FROM avatar_crop_jobs
                WHERE job_id = p_job_id AND (status = 'succeeded' OR user_id <> p_user_id)) THEN
        RAISE EXCEPTION 'the job is already succeeded or is another user''s' USING ERRCODE = 'AV002';
    END IF;
    SELECT j.job_id INTO current_job
      FROM profiles p JOIN avatar_crop_jobs j
        ON j.user_id = p.id AND j.avatar_version = p.avatar_version AND j.status = 'succeeded'
           AND j.avatar_sha256 IS NOT NULL
     WHERE p.id = p_user_id
     LIMIT 1;
    INSERT INTO profiles (id) VALUES (p_user_id) ON CONFLICT (id) DO NOTHING;
    UPDATE profiles
       SET avatar_path = p_path, avatar_version = avatar_version + 1, avatar_blurhash = p_blurhash,
           avatar_updated_at = now(), avatar_requested_at = p_requested_at
     WHERE id = p_user_id AND avatar_version = p_expected
       AND (avatar_requested_at IS NULL OR avatar_requested_at < p_requested_at
            OR (avatar_requested_at = p_requested_at AND current_job COLLATE "C" < p_job_id COLLATE "C"))
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

-- avatar_prune (0007) again, without the tombstones (1. above): ledger rows only.
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
    RETURN pruned;
END
$$;

-- Pinned search_path, as 0006 and 0007 pin theirs (CREATE OR REPLACE keeps avatar_publish's and avatar_prune's
-- settings; they are set again all the same).
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION avatar_user_lock_key(uuid) SET search_path = %I, pg_catalog, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION avatar_forgotten(uuid, timestamptz) SET search_path = %I, pg_catalog, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION avatar_job_forgotten(text, uuid, timestamptz) '
                   'SET search_path = %I, pg_catalog, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION avatar_start(text, uuid, timestamptz) SET search_path = %I, pg_catalog, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION avatar_record(text, uuid, timestamptz, text, text, int4, timestamptz) '
                   'SET search_path = %I, pg_catalog, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION avatar_publish(text, uuid, timestamptz, bigint, text, text[], text, text) '
                   'SET search_path = %I, pg_catalog, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION avatar_prune(timestamptz, int4) SET search_path = %I, pg_catalog, pg_temp',
                   current_schema());
END
$$;

GRANT EXECUTE ON FUNCTION avatar_user_lock_key(uuid) TO avatar_worker;
GRANT EXECUTE ON FUNCTION avatar_forgotten(uuid, timestamptz) TO avatar_worker;
GRANT EXECUTE ON FUNCTION avatar_job_forgotten(text, uuid, timestamptz) TO avatar_worker;
GRANT EXECUTE ON FUNCTION avatar_start(text, uuid, timestamptz) TO avatar_worker;
GRANT EXECUTE ON FUNCTION avatar_record(text, uuid, timestamptz, text, text, int4, timestamptz) TO avatar_worker;
