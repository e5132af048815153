-- Named queries for new runs made from a workflow's record (PostgreSQL): a fork, and
-- continue-as-new (workflow/fork.py, workflow/continuing.py).

-- name: fork_run_insert
-- The fork's instance row, made with its job: listed at once, in the source's generation.
INSERT INTO {schema}.workflow_runs (job_id, status, version, created_at, updated_at,
                                    generation)
SELECT %(target)s, 'running', %(version)s, {now}, {now}, r.generation
FROM {schema}.workflow_runs r WHERE r.job_id = %(source)s

-- name: fork_steps_copy
-- The body's records before the fork's place, with the sub-records of those steps (a
-- child's or a parallel call's reports, named '<step>/<i>'); compensations are not copied.
INSERT INTO {schema}.workflow_steps (job_id, name, status, result, wake_at, attempt, updated_at,
                                     position, kind, digest, outcome, tries, started_at)
SELECT %(target)s, s.name, s.status, s.result, s.wake_at, 0, {now}, s.position, s.kind,
       s.digest, s.outcome, s.tries, s.started_at
FROM {schema}.workflow_steps s
WHERE s.job_id = %(source)s
  AND (s.position < %(position)s
       OR (s.position IS NULL AND EXISTS (
           SELECT 1 FROM {schema}.workflow_steps p
           WHERE p.job_id = %(source)s AND p.position < %(position)s
             AND left(s.name, length(p.name) + 1) = p.name || '/')))
ORDER BY s.seq

-- name: fork_streams_copy
-- The stream values of the copied steps (and of earlier generations): the fork's readers
-- see what its history says was written.
INSERT INTO {schema}.workflow_streams (job_id, key, seq, value, closed, generation, position,
                                       created_at)
SELECT %(target)s, s.key, s.seq, s.value, s.closed, s.generation, s.position, s.created_at
FROM {schema}.workflow_streams s JOIN {schema}.workflow_runs r ON r.job_id = s.job_id
WHERE s.job_id = %(source)s
  AND (s.generation < r.generation OR s.position < %(position)s)

-- name: continue_lock
SELECT cancel_requested FROM {schema}.jobs
WHERE id = %(job)s AND attempt = %(attempt)s AND state = 'running' FOR UPDATE

-- name: continue_steps_delete
DELETE FROM {schema}.workflow_steps WHERE job_id = %(job)s

-- name: continue_events_delete
-- Events already taken are history; those not taken yet wait for the next run.
DELETE FROM {schema}.workflow_events WHERE job_id = %(job)s AND consumed_step IS NOT NULL

-- name: continue_joins_delete
DELETE FROM {schema}.workflow_joins WHERE job_id = %(job)s

-- name: continue_effects_delete
-- The children's enqueue-once keys (wf:<id>:<step>): the next run's steps start afresh.
DELETE FROM {schema}.effect_keys WHERE starts_with(key, %(prefix)s)

-- name: continue_run_reset
-- The generation is set, not counted up: a repeat after a lost reply sets the same.
UPDATE {schema}.workflow_runs
SET generation = %(generation)s, status = 'running', version = %(version)s,
    cancelled = false, cause = NULL, last_attempt = NULL, updated_at = {now}
WHERE job_id = %(job)s

-- name: continue_job_args
UPDATE {schema}.jobs SET args = %(args)s::jsonb WHERE id = %(job)s

-- name: run_generation
SELECT generation FROM {schema}.workflow_runs WHERE job_id = %(job)s
