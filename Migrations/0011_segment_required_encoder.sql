-- A job that names its video encoder (`--video-encoder libaom-av1`, issue 26) is only given to
-- workers that have it. docs/store.md, Claiming.
--
-- Copied from the job's settings into each of its segments when the plan is recorded (like
-- priority and job_created_at), so the claim reads it from the row it locks; NULL: any worker
-- (the codec's first encoder the worker's FFmpeg has). The workers' encoders come from their
-- HELLO (workers.capabilities->'encoders').

ALTER TABLE segments
    ADD COLUMN required_encoder text CHECK (required_encoder <> '');
