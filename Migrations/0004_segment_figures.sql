-- Per-segment figures in job status (issue 12). docs/store.md, Segment figures.
--
-- What encoding a done segment's video produced, as its worker's COMPLETE reported it
-- (SegmentFigures): the bytes of its video packets, their bit rate over the segment's span, and
-- the encoder's mean frame QP. Written with the result by the same batched completion, shown by
-- `splice status`. NULL for segments without video, for results of workers that predate the
-- figures, and for segments not done.

ALTER TABLE segments
    ADD COLUMN video_bytes           bigint CHECK (video_bytes >= 0),
    ADD COLUMN video_bits_per_second bigint CHECK (video_bits_per_second >= 0),
    -- NaN sorts above every number in PostgreSQL, so the upper bound keeps it (and Infinity) out.
    ADD COLUMN mean_qp               double precision CHECK (mean_qp BETWEEN 0 AND 1000),
    -- A rate or a QP only beside the bytes they describe.
    ADD CONSTRAINT segments_figures_complete CHECK (
        video_bytes IS NOT NULL OR (video_bits_per_second IS NULL AND mean_qp IS NULL));
