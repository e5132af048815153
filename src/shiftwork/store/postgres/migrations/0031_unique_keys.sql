-- Dedup windows (issue 30): a unique key enqueued with unique_for, unique_states or
-- debounce (jobs/dedup.py) is held by a row here, not by the jobs' partial unique index,
-- which can only hold a key while its job is in the four active states. The row names
-- the job that holds the key and what frees it: expires_at (unique_for: the enqueue plus
-- its seconds; NULL, never by time) and states (the holder's states that hold it; NULL,
-- any state). The function insert_dedup (functions.sql) takes and settles keys; the
-- leader's pruner deletes rows that can no longer hold (jobs.sql, unique_keys_prune).
CREATE TABLE {schema}.unique_keys (
    key        text PRIMARY KEY,
    job_id     bigint NOT NULL,
    states     text[],
    expires_at timestamptz
);
CREATE INDEX unique_keys_expires_idx ON {schema}.unique_keys (expires_at)
    WHERE expires_at IS NOT NULL;
-- apply: functions.sql
