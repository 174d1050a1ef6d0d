-- One spelling per job state, from the database to the API: a finished job is `succeeded`, as the
-- client API, the CLI and the status page always called it (the store alone said `completed`).
-- The checks that name the state are rebuilt around the new spelling.
ALTER TABLE jobs DROP CONSTRAINT jobs_state_check;
ALTER TABLE jobs DROP CONSTRAINT jobs_finished_iff_terminal;
ALTER TABLE jobs DROP CONSTRAINT jobs_running_has_plan;
ALTER TABLE jobs DROP CONSTRAINT jobs_stitching_all_done;

UPDATE jobs SET state = 'succeeded' WHERE state = 'completed';

ALTER TABLE jobs ADD CONSTRAINT jobs_state_check
    CHECK (state IN ('queued', 'planning', 'running', 'stitching', 'succeeded', 'failed', 'cancelled'));
ALTER TABLE jobs ADD CONSTRAINT jobs_finished_iff_terminal
    CHECK ((state IN ('succeeded', 'failed', 'cancelled')) = (finished_at IS NOT NULL));
ALTER TABLE jobs ADD CONSTRAINT jobs_running_has_plan
    CHECK (state NOT IN ('running', 'stitching', 'succeeded') OR (plan IS NOT NULL AND segments_total > 0));
ALTER TABLE jobs ADD CONSTRAINT jobs_stitching_all_done
    CHECK (state NOT IN ('stitching', 'succeeded') OR segments_done = segments_total);
