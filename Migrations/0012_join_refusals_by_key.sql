-- A refused join is recorded once per attempt, not once per ask. A worker asks again when no
-- answer has come within 100 ms (doubling up to 2 s, docs/protocol.md), so under load one refused
-- worker could append the same refusal two or three times; a worker restarted in a loop by its
-- supervisor, once every few seconds for as long as nobody looks. The store records a refusal
-- only when the same key, token and reason were not refused within the last 10 seconds
-- (JobRepository.join); this index lets it ask without reading the whole audit log.
-- docs/store.md, Join tokens.

CREATE INDEX job_events_join_refusals ON job_events (detail, at) WHERE kind = 'worker_join_refused';
