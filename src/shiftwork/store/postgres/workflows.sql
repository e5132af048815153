-- Named queries for durable workflows (PostgreSQL).

-- name: workflow_steps_get
SELECT name, status, result, wake_at, attempt, updated_at, position, kind, digest, outcome,
       tries, started_at
FROM {schema}.workflow_steps WHERE job_id = %(job)s ORDER BY seq

-- name: workflow_step_record
-- Fenced: only the attempt that holds the job may record a step. Returns the job's
-- cancel flag, so every durable call sees a cancel without waiting for a heartbeat.
INSERT INTO {schema}.workflow_steps (job_id, name, status, result, wake_at, attempt, updated_at,
                                     position, kind, digest, outcome, tries, started_at)
SELECT %(job)s, %(name)s, %(status)s, %(result)s::jsonb, %(wake_at)s, %(attempt)s, {now},
       %(position)s, %(kind)s, %(digest)s, %(outcome)s, %(tries)s, %(started_at)s
WHERE EXISTS (SELECT 1 FROM {schema}.jobs
              WHERE id = %(job)s AND attempt = %(attempt)s AND state = 'running')
ON CONFLICT (job_id, name) DO UPDATE
SET status = excluded.status, result = excluded.result, wake_at = excluded.wake_at,
    attempt = excluded.attempt, updated_at = excluded.updated_at,
    position = excluded.position, kind = excluded.kind, digest = excluded.digest,
    outcome = excluded.outcome, tries = excluded.tries,
    started_at = coalesce({schema}.workflow_steps.started_at, excluded.started_at)
RETURNING (SELECT cancel_requested FROM {schema}.jobs WHERE id = %(job)s)

-- name: workflow_run_insert
-- The instance row on its first run; on every run, which run began the body last.
INSERT INTO {schema}.workflow_runs (job_id, status, version, created_at, updated_at,
                                    began_attempt)
SELECT %(job)s, 'running', %(version)s, {now}, {now}, %(attempt)s
WHERE EXISTS (SELECT 1 FROM {schema}.jobs
              WHERE id = %(job)s AND attempt = %(attempt)s AND state = 'running')
ON CONFLICT (job_id) DO UPDATE SET began_attempt = excluded.began_attempt

-- name: workflow_run_get
SELECT r.status, r.version, r.cancelled, r.cause, r.last_attempt, j.cancel_requested,
       j.max_attempts
FROM {schema}.jobs j JOIN {schema}.workflow_runs r ON r.job_id = j.id
WHERE j.id = %(job)s AND j.attempt = %(attempt)s AND j.state = 'running'

-- name: workflow_run_set
-- Fenced like a step: the decision to compensate, and each final status.
UPDATE {schema}.workflow_runs
SET status = %(status)s, cancelled = %(cancelled)s, cause = coalesce(%(cause)s, cause),
    last_attempt = coalesce(%(last_attempt)s, last_attempt), updated_at = {now}
WHERE job_id = %(job)s
  AND EXISTS (SELECT 1 FROM {schema}.jobs
              WHERE id = %(job)s AND attempt = %(attempt)s AND state = 'running')

-- name: workflow_job_extend
-- More attempts for a decision already taken (compensation), fenced by attempt.
UPDATE {schema}.jobs SET max_attempts = greatest(max_attempts, attempt - uncounted + %(extra)s)
WHERE id = %(job)s AND attempt = %(attempt)s AND state = 'running'

-- name: workflow_event_insert
INSERT INTO {schema}.workflow_events (job_id, name, payload, created_at, key)
SELECT id, %(name)s, %(payload)s::jsonb, {now}, %(key)s FROM {schema}.jobs
WHERE id = %(job)s AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')
ON CONFLICT (job_id, name, key) WHERE key IS NOT NULL DO NOTHING
RETURNING id

-- name: workflow_event_by_key
SELECT id FROM {schema}.workflow_events WHERE job_id = %(job)s AND name = %(name)s AND key = %(key)s

-- name: workflow_job_active
SELECT 1 FROM {schema}.jobs
WHERE id = %(job)s AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')

-- name: workflow_join_lock
-- A join's report takes the parent's row first: reports to one parent count in turn, so
-- the last one sees all the others (none counts short and leaves the parent asleep).
SELECT 1 FROM {schema}.jobs WHERE id = %(job)s FOR UPDATE

-- name: workflow_join_bump
-- A join's report counted (under the parent's row lock): how many are in now.
UPDATE {schema}.workflow_joins SET reported = reported + 1
WHERE job_id = %(job)s AND key = %(key)s AND prefix = %(prefix)s
RETURNING reported

-- name: workflow_join_start
-- The join's first count: its reports so far (this one included), counted once.
INSERT INTO {schema}.workflow_joins (job_id, key, prefix, reported)
SELECT %(job)s, %(key)s, %(prefix)s, count(*) FROM {schema}.workflow_events
WHERE job_id = %(job)s AND key = %(key)s AND left(name, %(plen)s) = %(prefix)s
RETURNING reported

-- name: workflow_wake
-- A sleeping workflow runs at once; a running one is woken when it next suspends.
UPDATE {schema}.jobs
SET wake_requested = true,
    run_at = CASE WHEN state IN ('scheduled', 'retrying') THEN least(run_at, {now})
                  ELSE run_at END
WHERE id = %(job)s AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')

-- name: workflow_cancel
-- A started workflow is not cancelled in place: it is woken with the cancel flag set, so
-- it raises at its next durable call, compensates, and ends cancelled itself.
UPDATE {schema}.jobs j
-- a held workflow is released to cancel itself (its compensations run)
SET state = CASE WHEN j.state = 'held' THEN 'available' ELSE j.state END,
    hold_requested = false, cancel_requested = true, wake_requested = true,
    run_at = CASE WHEN j.state IN ('scheduled', 'retrying', 'held') THEN least(j.run_at, {now})
                  ELSE j.run_at END
WHERE j.id = %(job)s AND j.state IN ('scheduled', 'available', 'running', 'retrying', 'held')
  AND EXISTS (SELECT 1 FROM {schema}.workflow_runs r
              WHERE r.job_id = j.id AND r.status IN ('running', 'compensating'))
RETURNING j.id

-- name: workflow_event_take
UPDATE {schema}.workflow_events SET consumed_step = %(step)s
WHERE id = (SELECT id FROM {schema}.workflow_events
            WHERE job_id = %(job)s AND name = %(name)s AND consumed_step IS NULL
            ORDER BY id LIMIT 1 FOR UPDATE)
RETURNING payload

-- name: workflow_job_lock
SELECT 1 FROM {schema}.jobs
WHERE id = %(job)s AND attempt = %(attempt)s AND state = 'running' FOR UPDATE

-- name: workflows_list
SELECT j.id, j.task, j.state, r.status, r.version,
       (SELECT count(*) FROM {schema}.workflow_steps s WHERE s.job_id = j.id),
       r.created_at, r.updated_at
FROM {schema}.workflow_runs r JOIN {schema}.jobs j ON j.id = r.job_id
WHERE (%(status)s::text IS NULL OR r.status = %(status)s::text OR j.state = %(status)s::text)
  AND (%(task)s::text IS NULL OR j.task = %(task)s::text)
ORDER BY j.id DESC
LIMIT %(limit)s

-- name: workflow_run_read
SELECT r.status, r.version, r.cancelled, r.cause, r.last_attempt, j.cancel_requested,
       j.max_attempts
FROM {schema}.jobs j JOIN {schema}.workflow_runs r ON r.job_id = j.id
WHERE j.id = %(job)s
