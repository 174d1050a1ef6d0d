-- Longest first, and backup attempts for stragglers (issue 13). docs/store.md, Claim order and
-- Backup attempts.
--
-- cost: the planner's estimate of the work of a segment (SegmentSpec.cost: microseconds of
-- encoding, lead-in decoding included). Within a job the most expensive pending segments are
-- claimed first, so the longest ones do not end up alone at the end. Rows planned before this
-- column existed cost 0 and keep plan order.
--
-- backup_*: a second attempt of a leased segment, started when the job has nothing else left to
-- run and a slot is idle. It has its own fence (token, holder, expiry); the first of the two
-- attempts to commit its result wins, and the other is told to stop without being counted as a
-- failure. A segment gets at most one backup (backups counts those started).

ALTER TABLE segments
    ADD COLUMN cost              bigint NOT NULL DEFAULT 0 CHECK (cost >= 0),
    ADD COLUMN backup_token      uuid,
    ADD COLUMN backup_leased_by  uuid REFERENCES workers (id),
    ADD COLUMN backup_expires_at timestamptz,
    ADD COLUMN backups           integer NOT NULL DEFAULT 0 CHECK (backups BETWEEN 0 AND 1),
    -- A backup is all of token, holder and expiry, runs only beside a leased attempt, and holds a
    -- token of its own.
    ADD CONSTRAINT segments_backup_complete CHECK (
        (backup_token IS NULL) = (backup_leased_by IS NULL)
        AND (backup_token IS NULL) = (backup_expires_at IS NULL)
        AND (backup_token IS NULL OR (state = 'leased' AND backup_token <> lease_token AND backups = 1)));

-- Claim order: priority, then age, then job, then the most expensive segment first.
DROP INDEX segments_claimable;
CREATE INDEX segments_claimable ON segments (priority DESC, job_created_at, job_id, cost DESC, index)
    WHERE state = 'pending';
-- The reaper's scan of backups.
CREATE INDEX segments_backup_leases ON segments (backup_expires_at) WHERE backup_token IS NOT NULL;
