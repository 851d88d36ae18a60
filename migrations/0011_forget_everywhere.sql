-- Forgetting everywhere (docs/DATA.md, "Forgetting: the windows and what closes them"; docs/ARCHITECTURE.md §4).
--
-- Nothing here scans or rewrites avatar_crop_jobs: a new table, functions and grants.
--
-- 1. A tombstone that does not trust the producer's clock. A request is covered by a forget when its requested_at
--    is at most the tombstone's forgotten_at, and the worker accepts requests stamped up to
--    `worker.max-clock-skew-seconds` in the future. So a request accepted before the forget may carry a
--    requested_at up to the skew after the forget's own time: a forget stamps its tombstone at least the
--    database's now() plus that skew (avatar_forget with three arguments), and such a request, replayed later,
--    is still covered. The price: a request of the same user stamped within the skew after the forget is
--    superseded too (a forgotten account is deleted; its id does not come back).
-- 2. Forgets that complete. A forget is recorded in avatar_pending_forgets before it takes the user's lock and
--    leaves it once its last look is done; a forget that fails (a lock timeout, an outage longer than its retries)
--    stays, and every worker's ForgetSweeper runs it again when due until it completes. A row is the user id and
--    three times, for as long as the forget is unfinished.
-- 3. Late writes bounded. A publication's S3 writes are signed with the time their fence passed, and S3 refuses a
--    request signed more than 15 minutes from its clock: a write held up after its fence (a paused VM) lands
--    within that, plus the request's deadline, of the fence, which was before the forget took the lock. A forget
--    that completed keeps its row as a last look (last_look), due that long later; the sweep that runs it deletes
--    whatever landed under the user's prefix, then the row.
-- 4. Tombstones with a life. With `worker.max-request-age-hours` set, every connection of the worker and of its
--    commands carries it as the session setting avatar.max_request_age, and avatar_forgotten says true for a request
--    older than that as for one a forget covers (superseded, no row, nothing published); a tombstone older than it
--    covers nothing more and the prune deletes it (LedgerRetention). Unset, tombstones are kept for good (0009).

CREATE TABLE IF NOT EXISTS avatar_pending_forgets (
    user_id uuid PRIMARY KEY,
    requested_at timestamptz NOT NULL,
    pending_since timestamptz NOT NULL DEFAULT now(),
    attempts int4 NOT NULL DEFAULT 0,
    due_at timestamptz NOT NULL,
    last_look boolean NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS avatar_pending_forgets_due_idx ON avatar_pending_forgets (due_at);

-- avatar_forget (0007) with the accepted clock skew (1. above): the tombstone covers p_requested_at, the newest
-- request erased and now() + p_clock_skew_seconds, whichever is latest.
CREATE OR REPLACE FUNCTION avatar_forget(p_user_id uuid, p_requested_at timestamptz, p_clock_skew_seconds float8)
RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    SELECT avatar_forget(p_user_id, greatest(p_requested_at, now() + make_interval(secs => p_clock_skew_seconds)))
$$;

-- avatar_forgotten (0009) with the maximum request age (4. above): a request older than it is treated as covered.
CREATE OR REPLACE FUNCTION avatar_forgotten(p_user_id uuid, p_requested_at timestamptz) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT FROM avatar_forgotten_users WHERE user_id = p_user_id AND forgotten_at >= p_requested_at)
        OR coalesce(p_requested_at < now() - nullif(current_setting('avatar.max_request_age', true), '')::interval,
                    false)
$$;

-- Pinned search_path, as 0006, 0007 and 0009 pin theirs (docs/ARCHITECTURE.md §7; set again for avatar_forgotten).
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION avatar_forget(uuid, timestamptz, float8) '
                   'SET search_path = %I, pg_catalog, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION avatar_forgotten(uuid, timestamptz) SET search_path = %I, pg_catalog, pg_temp',
                   current_schema());
END
$$;

GRANT SELECT, INSERT, UPDATE, DELETE ON avatar_pending_forgets TO avatar_worker;
GRANT EXECUTE ON FUNCTION avatar_forget(uuid, timestamptz, float8) TO avatar_worker;
