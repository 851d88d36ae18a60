-- Pins the search_path of migration 0005's functions (security review, hygiene; docs/ARCHITECTURE.md
-- "Security limits").
--
-- avatar_lock_user and avatar_publish name their tables unqualified and were created without SET search_path,
-- so they resolved `profiles` and `avatar_crop_jobs` through the caller's path, where pg_temp comes first unless
-- the path names it: a session's temporary table could stand in for the real one. Both are SECURITY INVOKER, so
-- this gave a caller nothing it could not do itself, but a function should mean the same tables whoever calls it.
--
-- The path is the schema the migrations run in (the functions' own schema, which the files never name), then
-- pg_catalog, then pg_temp last. 0005 is applied and its checksum recorded: it is not edited, these are ALTERs.
-- The previous release calls the functions the same way, so it keeps working.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION avatar_lock_user(int4, int4, int4) SET search_path = %I, pg_catalog, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION avatar_publish(text, uuid, timestamptz, bigint, text, text[], text, text) '
                   'SET search_path = %I, pg_catalog, pg_temp', current_schema());
END
$$;
