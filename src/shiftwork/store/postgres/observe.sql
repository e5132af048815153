-- Named queries for visibility (metrics, health, top, dashboard). Each one reads
-- only partial indexes or small tables: never the retained history of finished jobs.

-- name: queue_minutes_add
INSERT INTO {schema}.queue_minutes AS m (queue, minute, succeeded, retried, dead, cancelled)
SELECT * FROM unnest(%(queues)s::text[], %(minutes)s::timestamptz[], %(succeeded)s::bigint[],
                     %(retried)s::bigint[], %(dead)s::bigint[], %(cancelled)s::bigint[])
ON CONFLICT (minute, queue) DO UPDATE
SET succeeded = m.succeeded + excluded.succeeded, retried = m.retried + excluded.retried,
    dead = m.dead + excluded.dead, cancelled = m.cancelled + excluded.cancelled

-- name: queue_minutes_list
SELECT queue, minute, succeeded, retried, dead, cancelled FROM {schema}.queue_minutes
WHERE minute >= %(since)s ORDER BY minute, queue

-- name: queue_minutes_prune
DELETE FROM {schema}.queue_minutes WHERE minute < {now} - make_interval(secs => %(keep)s)

-- name: task_minutes_add
INSERT INTO {schema}.task_minutes AS m (task, minute, succeeded, items, retried, dead, cancelled)
SELECT * FROM unnest(%(tasks)s::text[], %(minutes)s::timestamptz[], %(succeeded)s::bigint[],
                     %(items)s::bigint[], %(retried)s::bigint[], %(dead)s::bigint[],
                     %(cancelled)s::bigint[])
ON CONFLICT (minute, task) DO UPDATE
SET succeeded = m.succeeded + excluded.succeeded, items = m.items + excluded.items,
    retried = m.retried + excluded.retried, dead = m.dead + excluded.dead,
    cancelled = m.cancelled + excluded.cancelled

-- name: task_minutes_since
SELECT task, sum(succeeded)::bigint, sum(items)::bigint FROM {schema}.task_minutes
WHERE minute >= %(since)s GROUP BY task

-- name: task_minutes_prune
DELETE FROM {schema}.task_minutes WHERE minute < {now} - make_interval(secs => %(keep)s)

-- name: workers_running
SELECT worker_id, count(*) FROM {schema}.jobs
WHERE state = 'running' AND worker_id IS NOT NULL GROUP BY worker_id

-- name: jobs_waiting_by_task
-- Waiting jobs (due or not) per queue and task, with the oldest one's enqueue time: what
-- the health check holds against the tasks and queues the live workers serve.
SELECT queue, task, count(*), min(created_at) FROM {schema}.jobs
WHERE state IN ('available', 'scheduled', 'retrying') GROUP BY queue, task

-- name: jobs_search
SELECT * FROM {schema}.jobs
WHERE (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (id = %(id)s::bigint OR task = %(text)s::text OR unique_key = %(text)s::text
       OR unique_key = task || ':' || %(text)s::text
       OR (%(text)s::text IS NULL AND %(id)s::bigint IS NULL))
ORDER BY id DESC LIMIT %(limit)s

-- name: jobs_discard
WITH gone AS (
    DELETE FROM {schema}.jobs WHERE id = ANY(%(ids)s::bigint[]) AND state = 'dead' RETURNING id
), forgot AS (SELECT {schema}.jobs_forget(array(SELECT id FROM gone)))
SELECT id FROM gone, forgot

-- name: groups_busiest
-- Every waiting or running job with a group is read: for people, not for claims.
SELECT queue, meta->>'group',
       count(*) FILTER (WHERE state <> 'running'), count(*) FILTER (WHERE state = 'running')
FROM {schema}.jobs
WHERE state IN ('available', 'scheduled', 'retrying', 'running') AND meta ? 'group'
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
GROUP BY 1, 2
ORDER BY count(*) DESC, 1, 2
LIMIT %(limit)s

-- name: queue_group_counts
SELECT queue, count(DISTINCT meta->>'group') FILTER (WHERE state <> 'running'),
       count(DISTINCT meta->>'group') FILTER (WHERE state = 'running')
FROM {schema}.jobs
WHERE state IN ('available', 'scheduled', 'retrying', 'running') AND meta ? 'group'
GROUP BY 1 ORDER BY 1

-- name: history_last
-- The history rollup (observe/rollup.py): the newest bucket written.
SELECT max(bucket) FROM {schema}.history_rollup

-- name: history_queue_counts
SELECT queue, sum(succeeded)::bigint, sum(retried)::bigint, sum(dead)::bigint,
       sum(cancelled)::bigint
FROM {schema}.queue_minutes WHERE minute >= %(since)s AND minute < %(until)s GROUP BY queue

-- name: history_task_counts
SELECT task, sum(succeeded)::bigint, sum(retried)::bigint, sum(dead)::bigint,
       sum(cancelled)::bigint
FROM {schema}.task_minutes WHERE minute >= %(since)s AND minute < %(until)s GROUP BY task

-- name: history_durations
-- The nearest-rank p50 and p95 run time of the jobs that finished in a bucket, per queue
-- and per task: a range of jobs_finished_idx (its exact predicate, so it applies), sorted
-- in the database; two rows a queue or task come back, whatever the throughput.
WITH done AS (
    SELECT queue, task, extract(epoch FROM finished_at - attempted_at)::float8 AS d
    FROM {schema}.jobs
    WHERE state IN ('succeeded', 'cancelled', 'dead') AND state <> 'cancelled'
      AND finished_at >= %(since)s AND finished_at < %(until)s AND attempted_at IS NOT NULL
), ranked AS (
    SELECT queue, '' AS task, d, row_number() OVER (PARTITION BY queue ORDER BY d) AS n,
           count(*) OVER (PARTITION BY queue) AS total FROM done
    UNION ALL
    SELECT '', task, d, row_number() OVER (PARTITION BY task ORDER BY d),
           count(*) OVER (PARTITION BY task) FROM done
)
SELECT queue, task, total, n, d FROM ranked
WHERE n = (total * 50 + 99) / 100 OR n = (total * 95 + 99) / 100

-- name: history_waiting
-- The oldest due job per queue and task (the claim index: waiting jobs only).
SELECT queue, task, min(run_at) FROM {schema}.jobs
WHERE state IN ('available', 'scheduled', 'retrying') AND run_at <= {now}
GROUP BY queue, task

-- name: history_add
-- A bucket is written once: a second leader's write of the same bucket changes nothing.
INSERT INTO {schema}.history_rollup
    (queue, task, bucket, succeeded, retried, dead, cancelled, runs, p50, p95, oldest_wait)
SELECT * FROM unnest(%(queues)s::text[], %(tasks)s::text[], %(buckets)s::timestamptz[],
                     %(succeeded)s::bigint[], %(retried)s::bigint[], %(dead)s::bigint[],
                     %(cancelled)s::bigint[], %(runs)s::bigint[], %(p50)s::float8[],
                     %(p95)s::float8[], %(oldest_wait)s::float8[])
ON CONFLICT (queue, task, bucket) DO NOTHING

-- name: history_list
SELECT queue, task, bucket, succeeded, retried, dead, cancelled, runs, p50, p95, oldest_wait
FROM {schema}.history_rollup
WHERE bucket >= %(since)s
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(task)s::text IS NULL OR task = %(task)s::text)
ORDER BY queue, task, bucket

-- name: history_prune
DELETE FROM {schema}.history_rollup WHERE bucket < {now} - make_interval(secs => %(keep)s)
