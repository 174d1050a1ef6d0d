-- A SUBMIT's fingerprint beside its submission key (issue 21). docs/store.md, jobs.
--
-- The SHA-256 of the request a job was created from, in its canonical form (input, output,
-- priority and the export settings as the coordinator decoded them, defaults applied, keys
-- sorted): a SUBMIT that resends a key with the same request gets the job the key made; one
-- that reuses the key for another request is refused (ERROR conflict) instead of being
-- answered, silently, with a job that is not what it asked for. NULL for jobs submitted before
-- the column existed: those are matched by their key alone.

ALTER TABLE jobs
    ADD COLUMN submission_fingerprint text CHECK (submission_fingerprint ~ '^sha256:[0-9a-f]{64}$');
