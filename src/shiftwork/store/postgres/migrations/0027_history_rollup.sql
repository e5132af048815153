-- History charts (issue 29): per 5-minute bucket, one row per queue (task = '') and one
-- per task (queue = ''), written once by the leader when the bucket has closed
-- (observe/rollup.py): finished counts by outcome (from the workers' per-minute counts),
-- p50/p95 run time of the jobs that finished in it (from jobs_finished_idx) and the age
-- of the oldest due job when it closed (NULL: not sampled, e.g. written late).
-- Kept Settings.history_retention (48 h): 576 rows per queue or task at most.
CREATE TABLE {schema}.history_rollup (
    queue       text             NOT NULL,
    task        text             NOT NULL,
    bucket      timestamptz      NOT NULL,
    succeeded   bigint           NOT NULL DEFAULT 0,
    retried     bigint           NOT NULL DEFAULT 0,
    dead        bigint           NOT NULL DEFAULT 0,
    cancelled   bigint           NOT NULL DEFAULT 0,
    runs        bigint           NOT NULL DEFAULT 0,  -- finished jobs the durations are of
    p50         double precision,
    p95         double precision,
    oldest_wait double precision,
    PRIMARY KEY (queue, task, bucket)
);
-- The per-task counts the rollup reads: task_minutes had succeeded (and items) only.
ALTER TABLE {schema}.task_minutes ADD COLUMN retried bigint NOT NULL DEFAULT 0;
ALTER TABLE {schema}.task_minutes ADD COLUMN dead bigint NOT NULL DEFAULT 0;
ALTER TABLE {schema}.task_minutes ADD COLUMN cancelled bigint NOT NULL DEFAULT 0;
