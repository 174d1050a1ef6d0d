-- The HTTP API (issue 23): scoped bearer tokens, a job's own reference and webhook, and the
-- webhook outbox. docs/store.md (api_tokens, Webhooks) and docs/api.md.

-- Bearer tokens of the HTTP API. Only the SHA-256 of a token is kept (`sha256:` + hex): the token
-- itself is printed once, by `splice tokens create`, and cannot be read back. A token may only
-- name files under its own roots (empty: the coordinator's roots alone), and makes at most
-- `rate_limit` requests a second (NULL: the coordinator's --http-rate-limit).
CREATE TABLE api_tokens (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name          text NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    token_hash    text NOT NULL UNIQUE CHECK (token_hash ~ '^sha256:[0-9a-f]{64}$'),
    scopes        text[] NOT NULL
                  CHECK (cardinality(scopes) > 0 AND scopes <@ ARRAY['read', 'submit', 'cancel', 'admin']),
    input_roots   text[] NOT NULL DEFAULT '{}',
    output_roots  text[] NOT NULL DEFAULT '{}',
    rate_limit    integer CHECK (rate_limit BETWEEN 1 AND 1000000),
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    revoked_at    timestamptz
);

-- One live token per name; a revoked name may be given to a new token.
CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;

-- What an HTTP client said about its job: its own id for it (filterable), where to POST its
-- events and, optionally, the job's own signing secret (NULL: the coordinator's --webhook-secret).
-- The coordinator's --webhook-url is written into webhook_url when a job names none.
ALTER TABLE jobs
    ADD COLUMN reference      text CHECK (length(reference) BETWEEN 1 AND 256),
    ADD COLUMN webhook_url    text CHECK (webhook_url ~ '^https?://' AND length(webhook_url) <= 2048),
    ADD COLUMN webhook_secret text CHECK (length(webhook_secret) BETWEEN 16 AND 256),
    -- The token that submitted it over HTTP; NULL for the ZeroMQ API.
    ADD COLUMN submitted_by   uuid,
    ADD CONSTRAINT jobs_webhook_secret_has_url CHECK (webhook_secret IS NULL OR webhook_url IS NOT NULL);

-- GET /v1/jobs pages newest first by (created_at, id), all jobs or one reference's.
CREATE INDEX jobs_newest ON jobs (created_at DESC, id DESC);
CREATE INDEX jobs_by_reference ON jobs (reference, created_at DESC, id DESC) WHERE reference IS NOT NULL;

-- The webhook outbox: one row per event to deliver, written by the very statement that changes
-- the job's state (the trigger below), so an event exists exactly when its state change
-- committed — a coordinator killed at any moment neither loses nor invents one. The sender
-- claims due rows for a while (claimed_until), POSTs them, and records each attempt; `id` is the
-- Splice-Event-Id a receiver de-duplicates on, `seq` orders a job's events.
CREATE TABLE webhook_events (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    seq             bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    job_id          uuid NOT NULL,
    type            text NOT NULL CHECK (type IN ('job.planned', 'job.succeeded', 'job.failed', 'job.cancelled')),
    url             text NOT NULL,
    -- The job as the event reports it: its state then, and why it failed or was cancelled.
    state           text NOT NULL,
    error           text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    claimed_until   timestamptz,
    delivered_at    timestamptz,
    given_up_at     timestamptz,
    CONSTRAINT webhook_events_one_end CHECK (delivered_at IS NULL OR given_up_at IS NULL)
);

CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at)
    WHERE delivered_at IS NULL AND given_up_at IS NULL;
CREATE INDEX webhook_events_by_job ON webhook_events (job_id, seq);

-- Every delivery attempt: the receiver's status (NULL: no answer; error says why) and how it
-- ended — shown in GET /v1/jobs/{id} and counted in splice_webhook_deliveries_total.
CREATE TABLE webhook_deliveries (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id    uuid NOT NULL REFERENCES webhook_events (id),
    job_id      uuid NOT NULL,
    attempt     integer NOT NULL CHECK (attempt >= 1),
    at          timestamptz NOT NULL DEFAULT now(),
    status      integer CHECK (status BETWEEN 100 AND 599),
    error       text,
    duration_ms integer NOT NULL CHECK (duration_ms >= 0),
    outcome     text NOT NULL CHECK (outcome IN ('delivered', 'failed', 'expired'))
);

CREATE INDEX webhook_deliveries_by_job ON webhook_deliveries (job_id, id);

CREATE FUNCTION jobs_webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_events (job_id, type, url, state, error)
    VALUES (NEW.id, CASE NEW.state WHEN 'running' THEN 'job.planned' ELSE 'job.' || NEW.state END,
            NEW.webhook_url, NEW.state, NEW.error);
    RETURN NULL;
END;
$$;

-- A job planned (planning → running), succeeded, failed or cancelled, with a webhook: its event.
CREATE TRIGGER jobs_webhook_outbox
    AFTER UPDATE OF state ON jobs
    FOR EACH ROW
    WHEN (NEW.webhook_url IS NOT NULL AND OLD.state IS DISTINCT FROM NEW.state
          AND NEW.state IN ('running', 'succeeded', 'failed', 'cancelled'))
    EXECUTE FUNCTION jobs_webhook_outbox();
