-- Several coordinators on one database (issue 25). docs/coordinator.md, Standby coordinators, and
-- docs/store.md, Leadership and the fence.
--
-- coordinator_leader: one row. The active coordinator holds it by a lease (expires_at, on the
-- database's clock) that it renews; a standby takes it over once the lease has run out, raising
-- `epoch` by one. The epoch is the fencing token: every write a coordinator makes carries the
-- epoch it holds (the session setting splice.epoch), and the fence below refuses the write unless
-- that epoch is the current one. So a coordinator that was deposed while it was paused, cut off or
-- slow cannot change anything once it wakes up, whatever its own clock says.

CREATE TABLE coordinator_leader (
    id                integer PRIMARY KEY CHECK (id = 1),
    -- Raised by one at every take-over; 0 before the first coordinator.
    epoch             bigint NOT NULL CHECK (epoch >= 0),
    -- The holder's instance id (fresh for every coordinator process) and what it says of itself.
    holder            uuid,
    holder_name       text,
    api_endpoint      text,
    workers_endpoint  text,
    metrics_endpoint  text,
    -- The HTTP API's base URL (http://HOST:PORT/), when it serves one: a standby names it in its 503.
    http_endpoint     text,
    acquired_at       timestamptz,
    renewed_at        timestamptz,
    -- The lease: a standby may take over once now() passes it. -infinity: nobody holds it.
    expires_at        timestamptz NOT NULL,
    CONSTRAINT coordinator_leader_held CHECK ((epoch = 0) = (holder IS NULL))
);

INSERT INTO coordinator_leader (id, epoch, expires_at) VALUES (1, 0, '-infinity');

-- Every change of leader, appended by the coordinator that takes over (or releases on shutdown).
CREATE TABLE coordinator_events (
    id                    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at                    timestamptz NOT NULL DEFAULT now(),
    epoch                 bigint NOT NULL,
    kind                  text NOT NULL CHECK (kind IN ('acquired', 'released')),
    holder                uuid NOT NULL,
    holder_name           text,
    previous_epoch        bigint,
    previous_holder_name  text,
    -- Whether the previous holder's lease had run out (a take-over) or it was this holder's own.
    detail                text
);

CREATE FUNCTION coordinator_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'coordinator_events is append-only (% refused)', TG_OP USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER coordinator_events_append_only
    BEFORE UPDATE OR DELETE ON coordinator_events
    FOR EACH STATEMENT EXECUTE FUNCTION coordinator_events_append_only();

-- The epoch each audit event was written under (NULL for events written before this migration
-- and by tools): the fault suite reads from it that a deposed coordinator wrote nothing.
ALTER TABLE job_events
    ADD COLUMN epoch bigint DEFAULT nullif(current_setting('splice.epoch', true), '')::bigint;

-- The fence. A statement that writes a coordinator table first takes the fence lock shared (a
-- transaction-level advisory lock, "SPLICEFN"), then checks that the session's splice.epoch is
-- the current one; a take-over raises the epoch and then takes the lock exclusively, so it waits
-- for every transaction of the old epoch that got past the check (terminating those that do not
-- end), and every later write of the old epoch sees the new epoch and fails (SQLSTATE SP001).
-- A session that claims no epoch may write only when it says splice.fence = off (tests, repairs
-- by hand): an older coordinator that knows nothing of epochs is fenced off from the moment this
-- migration lands. Fenced writes run in READ COMMITTED, where the check's statement sees the
-- epoch as of the moment the lock was granted.
CREATE FUNCTION splice_fence() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    claimed text := current_setting('splice.epoch', true);
BEGIN
    IF claimed IS NULL OR claimed = '' THEN
        IF current_setting('splice.fence', true) = 'off' THEN
            RETURN NULL;
        END IF;
        RAISE EXCEPTION 'splice: % on % by a session that holds no coordinator epoch', TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'SP001',
                  HINT = 'only the active coordinator writes; a tool that must write sets splice.fence = off';
    END IF;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'splice: fenced writes run in READ COMMITTED, not %', current_setting('transaction_isolation')
            USING ERRCODE = 'SP001';
    END IF;
    PERFORM pg_advisory_xact_lock_shared(6003382180829808206);
    IF NOT EXISTS (SELECT 1 FROM coordinator_leader WHERE id = 1 AND epoch = claimed::bigint) THEN
        RAISE EXCEPTION 'splice: coordinator epoch % is no longer the current one: another coordinator took over',
            claimed USING ERRCODE = 'SP001';
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER jobs_fence BEFORE INSERT OR UPDATE OR DELETE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION splice_fence();
CREATE TRIGGER segments_fence BEFORE INSERT OR UPDATE OR DELETE ON segments
    FOR EACH STATEMENT EXECUTE FUNCTION splice_fence();
CREATE TRIGGER job_events_fence BEFORE INSERT ON job_events
    FOR EACH STATEMENT EXECUTE FUNCTION splice_fence();
CREATE TRIGGER workers_fence BEFORE INSERT OR UPDATE OR DELETE ON workers
    FOR EACH STATEMENT EXECUTE FUNCTION splice_fence();
