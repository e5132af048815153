-- Named queries for talking to a running workflow: its published state (queries) and the
-- requests sent to it (updates). PostgreSQL.

-- name: workflow_state_set
-- Fenced by attempt, and never backwards: a replay's write of an earlier place (a lower
-- stamp) changes nothing; the same place writes the same value again.
INSERT INTO {schema}.workflow_state AS s (job_id, key, value, stamp, updated_at)
SELECT %(job)s, %(key)s, %(value)s::jsonb, %(stamp)s, {now}
WHERE EXISTS (SELECT 1 FROM {schema}.jobs
              WHERE id = %(job)s AND attempt = %(attempt)s AND state = 'running')
ON CONFLICT (job_id, key) DO UPDATE
SET value = excluded.value, stamp = excluded.stamp, updated_at = excluded.updated_at
WHERE excluded.stamp >= s.stamp

-- name: workflow_state_get
SELECT key, value, updated_at FROM {schema}.workflow_state WHERE job_id = %(job)s ORDER BY key

-- name: workflow_update_insert
INSERT INTO {schema}.workflow_updates (job_id, name, payload, created_at)
SELECT id, %(name)s, %(payload)s::jsonb, {now} FROM {schema}.jobs
WHERE id = %(job)s AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')
RETURNING id

-- name: workflow_update_next
SELECT id, payload FROM {schema}.workflow_updates
WHERE job_id = %(job)s AND name = %(name)s AND status = 'pending'
ORDER BY id LIMIT 1

-- name: workflow_update_resolve
-- Once: only a pending update is resolved (under the workflow's row lock, taken first).
UPDATE {schema}.workflow_updates
SET status = %(status)s, result = %(result)s::jsonb, error = %(error)s::jsonb,
    step = %(step)s, resolved_at = {now}
WHERE id = %(id)s AND job_id = %(job)s AND status = 'pending'
RETURNING id

-- name: workflow_update_notify
-- The callers waiting on updates listen where result waiters do (the "done" topic).
SELECT pg_notify(%(channel)s, '*')

-- name: workflow_update_read
SELECT u.status, u.result, u.error, j.state
FROM {schema}.workflow_updates u JOIN {schema}.jobs j ON j.id = u.job_id
WHERE u.id = %(id)s

-- name: workflow_updates_list
SELECT id, name, payload, status, result, error, step, created_at, resolved_at
FROM {schema}.workflow_updates WHERE job_id = %(job)s ORDER BY id DESC LIMIT %(limit)s
