-- Named queries for durable workflows (SQLite).

-- name: workflow_steps_get
SELECT name, status, result, wake_at, attempt, updated_at FROM workflow_steps
WHERE job_id = :job ORDER BY seq

-- name: workflow_step_record
INSERT INTO workflow_steps (job_id, name, status, result, wake_at, attempt, updated_at, seq)
SELECT :job, :name, :status, :result, :wake_at, :attempt, :now,
       (SELECT coalesce(max(seq), 0) + 1 FROM workflow_steps WHERE job_id = :job)
WHERE EXISTS (SELECT 1 FROM jobs WHERE id = :job AND attempt = :attempt AND state = 'running')
ON CONFLICT (job_id, name) DO UPDATE
SET status = excluded.status, result = excluded.result, wake_at = excluded.wake_at,
    attempt = excluded.attempt, updated_at = excluded.updated_at

-- name: workflow_event_insert
INSERT INTO workflow_events (job_id, name, payload, created_at)
SELECT id, :name, :payload, :now FROM jobs
WHERE id = :job AND state IN ('scheduled', 'available', 'running', 'retrying')
RETURNING id

-- name: workflow_wake
UPDATE jobs
SET wake_requested = 1,
    run_at = CASE WHEN state IN ('scheduled', 'retrying') THEN min(run_at, :now) ELSE run_at END
WHERE id = :job AND state IN ('scheduled', 'available', 'running', 'retrying')

-- name: workflow_event_take
UPDATE workflow_events SET consumed_step = :step
WHERE id = (SELECT id FROM workflow_events
            WHERE job_id = :job AND name = :name AND consumed_step IS NULL
            ORDER BY id LIMIT 1)
RETURNING payload

-- name: workflow_job_held
SELECT 1 FROM jobs WHERE id = :job AND attempt = :attempt AND state = 'running'
