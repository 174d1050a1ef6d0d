-- Workers that join with a token, and retention (issue 24). docs/deploy.md (Join tokens,
-- Retention) and docs/store.md.

-- Join tokens: a worker presents one once, with its own CURVE public key, and the coordinator
-- enrolls that key. Only the SHA-256 of a token is kept (`sha256:` + hex), as for api_tokens: the
-- token itself is printed once, by `splice workers join-token create`. `uses_left` is decremented
-- by the very statement that admits a join, so two workers racing for the last use cannot both win.
CREATE TABLE join_tokens (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    token_hash  text NOT NULL UNIQUE CHECK (token_hash ~ '^sha256:[0-9a-f]{64}$'),
    uses        integer NOT NULL CHECK (uses BETWEEN 1 AND 1000000),
    uses_left   integer NOT NULL CHECK (uses_left BETWEEN 0 AND uses),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);

-- One live token per name; a revoked name may be given to a new token.
CREATE UNIQUE INDEX join_tokens_live_name ON join_tokens (name) WHERE revoked_at IS NULL;

-- Joins and refused joins are audit events that belong to no job: kind `worker_joined` or
-- `worker_join_refused`, the worker's key and the token's name in `detail`.
ALTER TABLE job_events ALTER COLUMN job_id DROP NOT NULL;
ALTER TABLE job_events ADD CONSTRAINT job_events_job_or_worker
    CHECK (job_id IS NOT NULL OR kind IN ('worker_joined', 'worker_join_refused'));

-- Retention (`splice jobs prune`, the coordinator's --retention) deletes a finished job's events
-- with the job. job_events stays append-only for everything else: only a transaction that says
-- SET LOCAL splice.prune = 'on' may delete, and never update.
CREATE OR REPLACE FUNCTION job_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('splice.prune', true) = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'job_events is append-only (% refused)', TG_OP USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER job_events_prune_fence BEFORE DELETE ON job_events
    FOR EACH STATEMENT EXECUTE FUNCTION splice_fence();

-- The prune's scan: finished jobs, oldest first.
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
