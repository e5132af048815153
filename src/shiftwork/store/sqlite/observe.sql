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
INSERT INTO task_minutes AS m (task, minute, succeeded, items)
VALUES (:task, :minute, :succeeded, :items)
ON CONFLICT (minute, task) DO UPDATE
SET succeeded = m.succeeded + excluded.succeeded, items = m.items + excluded.items

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
