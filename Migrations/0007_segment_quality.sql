-- Per-segment picture quality in job status (issue 27). docs/store.md, Segment figures.
--
-- What a verified (`--verify`) or quality-targeted (`--target-quality`) segment's worker measured
-- against the source frames it decoded (SegmentFigures.quality: frames, PSNR and SSIM of the luma
-- and of all planes, the worst frame and the worst second, as FFmpeg's psnr/ssim filters give
-- them), the CRF the segment was encoded at, and how many full encodes its target took (1, or 2
-- with a corrective one). Written with the result by the same batched completion as the figures
-- of 0004; NULL for segments that were not measured.

ALTER TABLE segments
    ADD COLUMN crf     double precision CHECK (crf BETWEEN 0 AND 63),
    ADD COLUMN encodes integer CHECK (encodes BETWEEN 1 AND 2),
    ADD COLUMN quality jsonb CHECK (jsonb_typeof(quality) = 'object'),
    -- Like the rate and the QP, only beside the bytes they describe.
    ADD CONSTRAINT segments_quality_with_figures CHECK (
        video_bytes IS NOT NULL OR (crf IS NULL AND encodes IS NULL AND quality IS NULL));
