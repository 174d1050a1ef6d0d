-- job_events keeps its references without foreign keys. Every event row is inserted by the
-- statement (or transaction) that changes the row it records, selected from that very row, so its
-- job_id and segment_id exist by construction; and the audit log should outlive whatever retention
-- later removes jobs. Checking the keys cost two referential-integrity queries per event (each a
-- KEY SHARE lock on the job's row): about a fifth of the server's CPU in the cluster benchmark.
-- docs/store.md, job_events.

ALTER TABLE job_events
    DROP CONSTRAINT job_events_job_id_fkey,
    DROP CONSTRAINT job_events_segment_id_fkey;
