-- Named queries for durable workflows (SQLite).

-- name: workflow_steps_get
SELECT name, status, result, wake_at, attempt, updated_at, position, kind, digest, outcome,
       tries, started_at
FROM workflow_steps WHERE job_id = :job ORDER BY seq

-- name: workflow_step_record
INSERT INTO workflow_steps (job_id, name, status, result, wake_at, attempt, updated_at, seq,
                            position, kind, digest, outcome, tries, started_at)
SELECT :job, :name, :status, :result, :wake_at, :attempt, :now,
       (SELECT coalesce(max(seq), 0) + 1 FROM workflow_steps WHERE job_id = :job),
       :position, :kind, :digest, :outcome, :tries, :started_at
WHERE EXISTS (SELECT 1 FROM jobs WHERE id = :job AND attempt = :attempt AND state = 'running')
ON CONFLICT (job_id, name) DO UPDATE
SET status = excluded.status, result = excluded.result, wake_at = excluded.wake_at,
    attempt = excluded.attempt, updated_at = excluded.updated_at,
    position = excluded.position, kind = excluded.kind, digest = excluded.digest,
    outcome = excluded.outcome, tries = excluded.tries,
    started_at = coalesce(workflow_steps.started_at, excluded.started_at)

-- name: workflow_cancel_flag
SELECT cancel_requested FROM jobs WHERE id = :job

-- name: workflow_run_insert
-- The instance row on its first run; on every run, which run began the body last.
INSERT INTO workflow_runs (job_id, status, version, created_at, updated_at, began_attempt)
SELECT :job, 'running', :version, :now, :now, :attempt
WHERE EXISTS (SELECT 1 FROM jobs WHERE id = :job AND attempt = :attempt AND state = 'running')
ON CONFLICT (job_id) DO UPDATE SET began_attempt = excluded.began_attempt

-- name: workflow_run_get
SELECT r.status, r.version, r.cancelled, r.cause, r.last_attempt, j.cancel_requested,
       j.max_attempts
FROM jobs j JOIN workflow_runs r ON r.job_id = j.id
WHERE j.id = :job AND j.attempt = :attempt AND j.state = 'running'

-- name: workflow_run_set
UPDATE workflow_runs
SET status = :status, cancelled = :cancelled, cause = coalesce(:cause, cause),
    last_attempt = coalesce(:last_attempt, last_attempt), updated_at = :now
WHERE job_id = :job
  AND EXISTS (SELECT 1 FROM jobs WHERE id = :job AND attempt = :attempt AND state = 'running')

-- name: workflow_job_extend
UPDATE jobs SET max_attempts = max(max_attempts, attempt - uncounted + :extra)
WHERE id = :job AND attempt = :attempt AND state = 'running'

-- name: workflow_event_insert
INSERT INTO workflow_events (job_id, name, payload, created_at, key)
SELECT id, :name, :payload, :now, :key FROM jobs
WHERE id = :job AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')
ON CONFLICT (job_id, name, key) WHERE key IS NOT NULL DO NOTHING
RETURNING id

-- name: workflow_event_by_key
SELECT id FROM workflow_events WHERE job_id = :job AND name = :name AND key = :key

-- name: workflow_job_active
SELECT 1 FROM jobs WHERE id = :job AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')

-- name: workflow_join_bump
-- (no row lock needed: SQLite write transactions run one at a time)
UPDATE workflow_joins SET reported = reported + 1
WHERE job_id = :job AND key = :key AND prefix = :prefix
RETURNING reported

-- name: workflow_join_start
INSERT INTO workflow_joins (job_id, key, prefix, reported)
SELECT :job, :key, :prefix, count(*) FROM workflow_events
WHERE job_id = :job AND key = :key AND substr(name, 1, :plen) = :prefix
RETURNING reported

-- name: workflow_wake
UPDATE jobs
SET wake_requested = 1,
    run_at = CASE WHEN state IN ('scheduled', 'retrying') THEN min(run_at, :now) ELSE run_at END
WHERE id = :job AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')

-- name: workflow_cancel
UPDATE jobs
-- a held workflow is released to cancel itself (its compensations run)
SET state = CASE WHEN state = 'held' THEN 'available' ELSE state END,
    hold_requested = 0, cancel_requested = 1, wake_requested = 1,
    run_at = CASE WHEN state IN ('scheduled', 'retrying', 'held') THEN min(run_at, :now) ELSE run_at END
WHERE id = :job AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')
  AND EXISTS (SELECT 1 FROM workflow_runs r
              WHERE r.job_id = jobs.id AND r.status IN ('running', 'compensating'))
RETURNING id

-- name: workflow_event_take
UPDATE workflow_events SET consumed_step = :step
WHERE id = (SELECT id FROM workflow_events
            WHERE job_id = :job AND name = :name AND consumed_step IS NULL
            ORDER BY id LIMIT 1)
RETURNING payload

-- name: workflow_job_held
SELECT 1 FROM jobs WHERE id = :job AND attempt = :attempt AND state = 'running'

-- name: workflows_list
SELECT j.id, j.task, j.state, r.status, r.version,
       (SELECT count(*) FROM workflow_steps s WHERE s.job_id = j.id),
       r.created_at, r.updated_at
FROM workflow_runs r JOIN jobs j ON j.id = r.job_id
WHERE (:status IS NULL OR r.status = :status OR j.state = :status)
  AND (:task IS NULL OR j.task = :task)
ORDER BY j.id DESC
LIMIT :limit

-- name: workflow_run_read
SELECT r.status, r.version, r.cancelled, r.cause, r.last_attempt, j.cancel_requested,
       j.max_attempts
FROM jobs j JOIN workflow_runs r ON r.job_id = j.id
WHERE j.id = :job
