-- Published bytes and crash-loop protection (DESIGN §3).
--
-- A job that wins uploads its renders under users/{uid}/versions/{N}/ first, commits the version bump and this
-- ledger row, then copies them onto the public keys. avatar_sha256 is the SHA-256 (hex) of the bytes published at
-- avatar_path for avatar_version, so anyone can check the public object against the profile's current version.
-- rendition_paths are the public keys of the extra renditions published with it.
--
-- 'started' rows count renders that never reported back: render_attempts is incremented before each render and
-- reset when the job's outcome is recorded; a job found started worker.max-crash-attempts times is failed without
-- another render.

ALTER TABLE avatar_crop_jobs
    ADD COLUMN IF NOT EXISTS avatar_sha256 text,
    ADD COLUMN IF NOT EXISTS rendition_paths text[],
    ADD COLUMN IF NOT EXISTS render_attempts int NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS started_at timestamptz;

ALTER TABLE avatar_crop_jobs DROP CONSTRAINT IF EXISTS avatar_crop_jobs_status_check;
ALTER TABLE avatar_crop_jobs
    ADD CONSTRAINT avatar_crop_jobs_status_check
    CHECK (status IN ('started', 'succeeded', 'failed', 'superseded'));

-- The ledger row of a profile's current version (repair, checkers).
CREATE INDEX IF NOT EXISTS avatar_crop_jobs_user_version_idx
    ON avatar_crop_jobs (user_id, avatar_version) WHERE status = 'succeeded';
