-- Named queries for new runs made from a workflow's record (SQLite): a fork, and
-- continue-as-new (workflow/fork.py, workflow/continuing.py).

-- name: fork_run_insert
INSERT INTO workflow_runs (job_id, status, version, created_at, updated_at, generation)
SELECT :target, 'running', :version, :now, :now, r.generation
FROM workflow_runs r WHERE r.job_id = :source

-- name: fork_steps_copy
-- The body's records before the fork's place, with the sub-records of those steps (a
-- child's or a parallel call's reports, named '<step>/<i>'); compensations are not copied.
INSERT INTO workflow_steps (job_id, name, status, result, wake_at, attempt, updated_at, seq,
                            position, kind, digest, outcome, tries, started_at)
SELECT :target, s.name, s.status, s.result, s.wake_at, 0, :now, s.seq, s.position, s.kind,
       s.digest, s.outcome, s.tries, s.started_at
FROM workflow_steps s
WHERE s.job_id = :source
  AND (s.position < :position
       OR (s.position IS NULL AND EXISTS (
           SELECT 1 FROM workflow_steps p
           WHERE p.job_id = :source AND p.position < :position
             AND substr(s.name, 1, length(p.name) + 1) = p.name || '/')))

-- name: fork_streams_copy
INSERT INTO workflow_streams (job_id, key, seq, value, closed, generation, position,
                              created_at)
SELECT :target, s.key, s.seq, s.value, s.closed, s.generation, s.position, s.created_at
FROM workflow_streams s JOIN workflow_runs r ON r.job_id = s.job_id
WHERE s.job_id = :source
  AND (s.generation < r.generation OR s.position < :position)

-- name: continue_lock
SELECT cancel_requested FROM jobs WHERE id = :job AND attempt = :attempt AND state = 'running'

-- name: continue_steps_delete
DELETE FROM workflow_steps WHERE job_id = :job

-- name: continue_events_delete
DELETE FROM workflow_events WHERE job_id = :job AND consumed_step IS NOT NULL

-- name: continue_joins_delete
DELETE FROM workflow_joins WHERE job_id = :job

-- name: continue_effects_delete
DELETE FROM effect_keys WHERE substr(key, 1, length(:prefix)) = :prefix

-- name: continue_run_reset
-- The generation is set, not counted up: a repeat after a lost reply sets the same.
UPDATE workflow_runs
SET generation = :generation, status = 'running', version = :version,
    cancelled = 0, cause = NULL, last_attempt = NULL, updated_at = :now
WHERE job_id = :job

-- name: continue_job_args
UPDATE jobs SET args = :args WHERE id = :job

-- name: run_generation
SELECT generation FROM workflow_runs WHERE job_id = :job
