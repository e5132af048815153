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
INSERT INTO {schema}.task_minutes AS m (task, minute, succeeded, items)
SELECT * FROM unnest(%(tasks)s::text[], %(minutes)s::timestamptz[], %(succeeded)s::bigint[],
                     %(items)s::bigint[])
ON CONFLICT (minute, task) DO UPDATE
SET succeeded = m.succeeded + excluded.succeeded, items = m.items + excluded.items

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
DELETE FROM {schema}.jobs WHERE id = ANY(%(ids)s::bigint[]) AND state = 'dead' RETURNING id

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
