-- Tombstones keyed by a keyed hash of the user id (docs/DATA.md, window 8; docs/ARCHITECTURE.md §4).
--
-- A tombstone was the raw user id and two times: personal data kept after the account is gone. It is now
-- HMAC-SHA256(database.tombstone-key, the user id as lower-case text), and nothing in the database can turn it back
-- into an id. The key is never stored: every connection of the worker and of its commands carries it as the session
-- setting avatar.tombstone_key (hex), sent in the connection's startup packet rather than as a statement, so a
-- server that logs statements does not log it. avatar_user_key computes the hash, and refuses (AV004) in a session
-- without the key, so no tombstone is written or missed unkeyed. Only this file's functions read the setting.
--
-- The existing tombstones are rewritten here, keyed: `migrate` carries the key like every command, and fails (AV004)
-- when there are tombstones to rewrite and it has none. The table is copied and the old one dropped, so no raw id
-- stays behind in dead tuples or a dropped column (the WAL and backups keep them for their own retention).

-- HMAC-SHA256 (RFC 2104) with the server's sha256 (Postgres 11+): no extension needed.
CREATE OR REPLACE FUNCTION avatar_hmac_sha256(p_key bytea, p_message bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    k bytea := CASE WHEN length(p_key) > 64 THEN sha256(p_key) ELSE p_key END;
    inner_pad bytea;
    outer_pad bytea;
BEGIN
    k := k || decode(repeat('00', 64 - length(k)), 'hex');
    inner_pad := k;
    outer_pad := k;
    FOR i IN 0..63 LOOP
        inner_pad := set_byte(inner_pad, i, get_byte(k, i) # 54);   -- 0x36
        outer_pad := set_byte(outer_pad, i, get_byte(k, i) # 92);   -- 0x5c
    END LOOP;
    RETURN sha256(outer_pad || sha256(inner_pad || p_message));
END
$$;

-- The tombstone key of a user: the keyed hash of its canonical id (uuid's text form is lower-case).
CREATE OR REPLACE FUNCTION avatar_user_key(p_user_id uuid) RETURNS bytea
LANGUAGE plpgsql STABLE AS $$
DECLARE
    key text := nullif(current_setting('avatar.tombstone_key', true), '');
BEGIN
    IF key IS NULL THEN
        RAISE EXCEPTION 'this session has no tombstone key (database.tombstone-key)' USING ERRCODE = 'AV004';
    END IF;
    RETURN avatar_hmac_sha256(decode(key, 'hex'), convert_to(p_user_id::text, 'UTF8'));
END
$$;

CREATE TABLE avatar_forgotten_keys (
    user_key bytea PRIMARY KEY,
    forgotten_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO avatar_forgotten_keys (user_key, forgotten_at, recorded_at)
SELECT avatar_user_key(user_id), forgotten_at, recorded_at FROM avatar_forgotten_users;
DROP TABLE avatar_forgotten_users;
ALTER TABLE avatar_forgotten_keys RENAME TO avatar_forgotten_users;
ALTER INDEX avatar_forgotten_keys_pkey RENAME TO avatar_forgotten_users_pkey;

-- avatar_forget (0007), the tombstone keyed.
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
    INSERT INTO avatar_forgotten_users AS f (user_key, forgotten_at, recorded_at)
    VALUES (avatar_user_key(p_user_id), newest, now())
    ON CONFLICT (user_key) DO UPDATE
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

-- avatar_forgotten (0011), the tombstone looked up by its key.
CREATE OR REPLACE FUNCTION avatar_forgotten(p_user_id uuid, p_requested_at timestamptz) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT FROM avatar_forgotten_users
                    WHERE user_key = avatar_user_key(p_user_id) AND forgotten_at >= p_requested_at)
        OR coalesce(p_requested_at < now() - nullif(current_setting('avatar.max_request_age', true), '')::interval,
                    false)
$$;

-- Pinned search_path, as 0006, 0007, 0009 and 0011 pin theirs (docs/ARCHITECTURE.md §7).
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION avatar_hmac_sha256(bytea, bytea) SET search_path = %I, pg_catalog, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION avatar_user_key(uuid) SET search_path = %I, pg_catalog, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION avatar_forget(uuid, timestamptz) SET search_path = %I, pg_catalog, pg_temp',
                   current_schema());
    EXECUTE format('ALTER FUNCTION avatar_forgotten(uuid, timestamptz) SET search_path = %I, pg_catalog, pg_temp',
                   current_schema());
END
$$;

GRANT SELECT, INSERT, UPDATE, DELETE ON avatar_forgotten_users TO avatar_worker;
GRANT EXECUTE ON FUNCTION avatar_hmac_sha256(bytea, bytea) TO avatar_worker;
GRANT EXECUTE ON FUNCTION avatar_user_key(uuid) TO avatar_worker;
