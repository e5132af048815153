-- Named queries for durable workflows (PostgreSQL).

-- name: workflow_steps_get
SELECT name, status, result, wake_at, attempt, updated_at FROM {schema}.workflow_steps
WHERE job_id = %(job)s ORDER BY seq

-- name: workflow_step_record
-- Fenced: only the attempt that holds the job may record a step.
INSERT INTO {schema}.workflow_steps (job_id, name, status, result, wake_at, attempt, updated_at)
SELECT %(job)s, %(name)s, %(status)s, %(result)s::jsonb, %(wake_at)s, %(attempt)s, {now}
WHERE EXISTS (SELECT 1 FROM {schema}.jobs
              WHERE id = %(job)s AND attempt = %(attempt)s AND state = 'running')
ON CONFLICT (job_id, name) DO UPDATE
SET status = excluded.status, result = excluded.result, wake_at = excluded.wake_at,
    attempt = excluded.attempt, updated_at = excluded.updated_at

-- name: workflow_event_insert
INSERT INTO {schema}.workflow_events (job_id, name, payload, created_at)
SELECT id, %(name)s, %(payload)s::jsonb, {now} FROM {schema}.jobs
WHERE id = %(job)s AND state IN ('scheduled', 'available', 'running', 'retrying')
RETURNING id

-- name: workflow_wake
-- A sleeping workflow runs at once; a running one is woken when it next suspends.
UPDATE {schema}.jobs
SET wake_requested = true,
    run_at = CASE WHEN state IN ('scheduled', 'retrying') THEN least(run_at, {now})
                  ELSE run_at END
WHERE id = %(job)s AND state IN ('scheduled', 'available', 'running', 'retrying')

-- name: workflow_event_take
UPDATE {schema}.workflow_events SET consumed_step = %(step)s
WHERE id = (SELECT id FROM {schema}.workflow_events
            WHERE job_id = %(job)s AND name = %(name)s AND consumed_step IS NULL
            ORDER BY id LIMIT 1 FOR UPDATE)
RETURNING payload

-- name: workflow_job_lock
SELECT 1 FROM {schema}.jobs
WHERE id = %(job)s AND attempt = %(attempt)s AND state = 'running' FOR UPDATE
