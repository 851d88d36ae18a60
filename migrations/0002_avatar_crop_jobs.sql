-- The ledger of finished crop jobs. A redelivered or replayed job whose row says `succeeded` is a no-op; the row
-- and the profile's new avatar_version commit in one transaction.

CREATE TABLE IF NOT EXISTS avatar_crop_jobs (
    job_id text PRIMARY KEY,
    user_id uuid NOT NULL,
    status text NOT NULL CHECK (status IN ('succeeded', 'failed', 'superseded')),
    requested_at timestamptz NOT NULL,
    avatar_version bigint,
    avatar_path text,
    error_code text,
    attempts int NOT NULL DEFAULT 1,
    first_failed_at timestamptz,
    finished_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS avatar_crop_jobs_user_requested_idx
    ON avatar_crop_jobs (user_id, requested_at DESC);
