-- Profiles and their avatar columns.
--
-- Apps usually have their own `profiles` table already: then only the avatar columns are added and the app's
-- columns and rows stay as they are. Otherwise a minimal table is created. Everything is unqualified: it lands in
-- the current schema (the first schema of the search_path), so tests and tenants can use their own schema.

CREATE TABLE IF NOT EXISTS profiles (
    id uuid PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE profiles
    -- Storage key of the published avatar (users/{uid}/avatar_512.png).
    ADD COLUMN IF NOT EXISTS avatar_path text,
    -- Bumped by every published avatar; clients append it to the URL to bust caches.
    ADD COLUMN IF NOT EXISTS avatar_version bigint NOT NULL DEFAULT 0,
    -- Placeholder the app shows while the image loads.
    ADD COLUMN IF NOT EXISTS avatar_blurhash text,
    -- When the published avatar was written.
    ADD COLUMN IF NOT EXISTS avatar_updated_at timestamptz,
    -- requested_at of the request that produced the published avatar: an older request never overwrites it.
    ADD COLUMN IF NOT EXISTS avatar_requested_at timestamptz;
