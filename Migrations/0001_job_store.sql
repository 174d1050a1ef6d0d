-- Splice job store: jobs, their segments (fenced leases), workers, and the append-only audit log.
-- Applied by SpliceStore's Migrator inside one transaction under an advisory lock. Never edit this
-- file once it has landed: add 0002_….sql instead (the migrator refuses a changed checksum).
-- docs/store.md explains every column and the lease/fencing protocol.

CREATE TABLE workers (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- CURVE public key (Z85 text) the worker authenticates with; one row per key.
    public_key    text NOT NULL UNIQUE CHECK (length(public_key) > 0),
    name          text NOT NULL,
    slots         integer NOT NULL CHECK (slots > 0),
    capabilities  jsonb NOT NULL DEFAULT '{}'::jsonb,
    state         text NOT NULL DEFAULT 'offline'
                  CHECK (state IN ('online', 'draining', 'offline', 'revoked')),
    enrolled_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz,
    revoked_at    timestamptz,
    -- A revoked worker stays revoked: the two columns say the same thing and must agree.
    CONSTRAINT workers_revoked_consistent CHECK ((state = 'revoked') = (revoked_at IS NOT NULL))
);

CREATE TABLE jobs (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- Client-supplied: submitting the same key twice returns the first job.
    idempotency_key  text NOT NULL UNIQUE CHECK (length(idempotency_key) > 0),
    source_url       text NOT NULL,
    output_url       text NOT NULL,
    settings         jsonb NOT NULL,
    plan             jsonb,
    state            text NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'planning', 'running', 'stitching',
                                      'completed', 'failed', 'cancelled')),
    priority         integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL DEFAULT 5 CHECK (max_attempts BETWEEN 1 AND 100),
    segments_total   integer NOT NULL DEFAULT 0 CHECK (segments_total >= 0),
    segments_done    integer NOT NULL DEFAULT 0,
    error            text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    CONSTRAINT jobs_done_within_total CHECK (segments_done BETWEEN 0 AND segments_total),
    -- Terminal states and only they carry finished_at.
    CONSTRAINT jobs_finished_iff_terminal
        CHECK ((state IN ('completed', 'failed', 'cancelled')) = (finished_at IS NOT NULL)),
    CONSTRAINT jobs_failed_has_error CHECK (state <> 'failed' OR error IS NOT NULL),
    -- A job runs only once it has a plan with at least one segment, and stitches only when all are done.
    CONSTRAINT jobs_running_has_plan
        CHECK (state NOT IN ('running', 'stitching', 'completed') OR (plan IS NOT NULL AND segments_total > 0)),
    CONSTRAINT jobs_stitching_all_done
        CHECK (state NOT IN ('stitching', 'completed') OR segments_done = segments_total)
);

CREATE INDEX jobs_unfinished ON jobs (state, priority DESC, created_at) WHERE finished_at IS NULL;

CREATE TABLE segments (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id           uuid NOT NULL REFERENCES jobs (id),
    index            integer NOT NULL CHECK (index >= 0),
    -- Exact media time range [range_start, range_end) in units of 1/range_timescale seconds.
    range_start      bigint NOT NULL,
    range_end        bigint NOT NULL,
    range_timescale  integer NOT NULL CHECK (range_timescale > 0),
    -- Anything else the planner wants the worker to know, opaque to the store.
    spec             jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- Copied from the job so that claiming needs no join: priority first, then age.
    priority         integer NOT NULL,
    job_created_at   timestamptz NOT NULL,
    state            text NOT NULL DEFAULT 'pending'
                     CHECK (state IN ('pending', 'leased', 'done', 'failed', 'dead', 'cancelled')),
    attempt          integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL CHECK (max_attempts >= 1),
    -- Fresh for every claim; kept after the attempt ends so a duplicate COMPLETE can be recognised.
    lease_token      uuid,
    leased_by        uuid REFERENCES workers (id),
    lease_expires_at timestamptz,
    heartbeat_at     timestamptz,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    -- Workers whose attempt failed or was taken back; several distinct ones make a segment dead.
    failed_workers   uuid[] NOT NULL DEFAULT '{}',
    output_url       text,
    checksum         text,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    CONSTRAINT segments_job_index UNIQUE (job_id, index),
    CONSTRAINT segments_range_not_empty CHECK (range_end > range_start),
    CONSTRAINT segments_attempts_bounded CHECK (attempt BETWEEN 0 AND max_attempts),
    -- A lease is all of token, holder and expiry, and exists exactly while the segment is leased.
    CONSTRAINT segments_lease_complete CHECK (
        (state = 'leased') = (leased_by IS NOT NULL AND lease_expires_at IS NOT NULL)
        AND (state <> 'leased' OR lease_token IS NOT NULL)),
    CONSTRAINT segments_done_has_output CHECK (state <> 'done' OR (output_url IS NOT NULL AND lease_token IS NOT NULL)),
    CONSTRAINT segments_finished_iff_terminal
        CHECK ((state IN ('done', 'failed', 'dead', 'cancelled')) = (finished_at IS NOT NULL))
);

-- The claim query walks this index in order and skips rows other claimers hold.
CREATE INDEX segments_claimable ON segments (priority DESC, job_created_at, job_id, index)
    WHERE state = 'pending';
-- The reaper's scan.
CREATE INDEX segments_leases ON segments (lease_expires_at) WHERE state = 'leased';
CREATE INDEX segments_leased_by ON segments (leased_by) WHERE state = 'leased';

CREATE TABLE job_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      uuid NOT NULL REFERENCES jobs (id),
    segment_id  bigint REFERENCES segments (id),
    at          timestamptz NOT NULL DEFAULT now(),
    kind        text NOT NULL,
    from_state  text,
    to_state    text,
    attempt     integer,
    worker_id   uuid,
    lease_token uuid,
    detail      text
);

CREATE INDEX job_events_by_job ON job_events (job_id, id);

-- job_events is an audit log: rows are only ever appended.
CREATE FUNCTION job_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'job_events is append-only (% refused)', TG_OP USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER job_events_append_only
    BEFORE UPDATE OR DELETE ON job_events
    FOR EACH STATEMENT EXECUTE FUNCTION job_events_append_only();
