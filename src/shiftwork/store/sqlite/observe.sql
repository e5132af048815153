-- Named queries for visibility (see the PostgreSQL file).

-- name: queue_minutes_add
INSERT INTO queue_minutes AS m (queue, minute, succeeded, retried, dead, cancelled)
VALUES (:queue, :minute, :succeeded, :retried, :dead, :cancelled)
ON CONFLICT (minute, queue) DO UPDATE
SET succeeded = m.succeeded + excluded.succeeded, retried = m.retried + excluded.retried,
    dead = m.dead + excluded.dead, cancelled = m.cancelled + excluded.cancelled

-- name: queue_minutes_list
SELECT queue, minute, succeeded, retried, dead, cancelled FROM queue_minutes
WHERE minute >= :since ORDER BY minute, queue

-- name: queue_minutes_prune
DELETE FROM queue_minutes WHERE minute < :now - :keep

-- name: task_minutes_add
INSERT INTO task_minutes AS m (task, minute, succeeded, items, retried, dead, cancelled)
VALUES (:task, :minute, :succeeded, :items, :retried, :dead, :cancelled)
ON CONFLICT (minute, task) DO UPDATE
SET succeeded = m.succeeded + excluded.succeeded, items = m.items + excluded.items,
    retried = m.retried + excluded.retried, dead = m.dead + excluded.dead,
    cancelled = m.cancelled + excluded.cancelled

-- name: task_minutes_since
SELECT task, sum(succeeded), sum(items) FROM task_minutes
WHERE minute >= :since GROUP BY task

-- name: task_minutes_prune
DELETE FROM task_minutes WHERE minute < :now - :keep

-- name: workers_running
SELECT worker_id, count(*) FROM jobs
WHERE state = 'running' AND worker_id IS NOT NULL GROUP BY worker_id

-- name: jobs_waiting_by_task
-- Waiting jobs (due or not) per queue and task, with the oldest one's enqueue time: what
-- the health check holds against the tasks and queues the live workers serve.
SELECT queue, task, count(*), min(created_at) FROM jobs
WHERE state IN ('available', 'scheduled', 'retrying') GROUP BY queue, task

-- name: jobs_search
SELECT * FROM jobs
WHERE (:state IS NULL OR state = :state)
  AND (:queue IS NULL OR queue = :queue)
  AND (id = :id OR task = :text OR unique_key = :text OR unique_key = task || ':' || :text
       OR (:text IS NULL AND :id IS NULL))
ORDER BY id DESC LIMIT :limit

-- name: jobs_discard
DELETE FROM jobs WHERE id = :id AND state = 'dead'

-- name: groups_busiest
-- Every waiting or running job with a group is read: for people, not for claims.
SELECT queue, json_extract(meta, '$.group'),
       sum(state <> 'running'), sum(state = 'running')
FROM jobs
WHERE state IN ('available', 'scheduled', 'retrying', 'running')
  AND json_extract(meta, '$.group') IS NOT NULL
  AND (:queue IS NULL OR queue = :queue)
GROUP BY 1, 2
ORDER BY count(*) DESC, 1, 2
LIMIT :limit

-- name: queue_group_counts
SELECT queue,
       count(DISTINCT CASE WHEN state <> 'running' THEN json_extract(meta, '$.group') END),
       count(DISTINCT CASE WHEN state = 'running' THEN json_extract(meta, '$.group') END)
FROM jobs
WHERE state IN ('available', 'scheduled', 'retrying', 'running')
  AND json_extract(meta, '$.group') IS NOT NULL
GROUP BY 1 ORDER BY 1

-- name: history_last
SELECT max(bucket) FROM history_rollup

-- name: history_queue_counts
SELECT queue, sum(succeeded), sum(retried), sum(dead), sum(cancelled)
FROM queue_minutes WHERE minute >= :since AND minute < :until GROUP BY queue

-- name: history_task_counts
SELECT task, sum(succeeded), sum(retried), sum(dead), sum(cancelled)
FROM task_minutes WHERE minute >= :since AND minute < :until GROUP BY task

-- name: history_durations
-- See the PostgreSQL file: jobs_finished_idx's exact predicate, so the index applies.
WITH done AS (
    SELECT queue, task, finished_at - attempted_at AS d FROM jobs
    WHERE state IN ('succeeded', 'cancelled', 'dead') AND state <> 'cancelled'
      AND finished_at >= :since AND finished_at < :until AND attempted_at IS NOT NULL
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
SELECT queue, task, min(run_at) FROM jobs
WHERE state IN ('available', 'scheduled', 'retrying') AND run_at <= :now
GROUP BY queue, task

-- name: history_add
INSERT INTO history_rollup
    (queue, task, bucket, succeeded, retried, dead, cancelled, runs, p50, p95, oldest_wait)
VALUES (:queue, :task, :bucket, :succeeded, :retried, :dead, :cancelled, :runs, :p50, :p95,
        :oldest_wait)
ON CONFLICT (queue, task, bucket) DO NOTHING

-- name: history_list
SELECT queue, task, bucket, succeeded, retried, dead, cancelled, runs, p50, p95, oldest_wait
FROM history_rollup
WHERE bucket >= :since AND (:queue IS NULL OR queue = :queue)
  AND (:task IS NULL OR task = :task)
ORDER BY queue, task, bucket

-- name: history_prune
DELETE FROM history_rollup WHERE bucket < :now - :keep
