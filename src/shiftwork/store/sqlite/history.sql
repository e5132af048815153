-- Named queries of the dashboard's history pages (SQLite): the workflows list, a
-- workflow's events, a schedule's occurrences with their jobs.

-- name: workflows_page
-- Newest first, keyset-paged by id (walking workflow_runs' primary key: a page reads
-- `limit` rows of it without a filter, more with one). The current step is the newest
-- recorded one. `state`: the job's state.
-- `before` is never NULL (the first page gives the largest id): with `:before IS NULL OR`
-- the generic plan of the prepared statement joined every row (94 ms at 100,000).
SELECT j.id, j.task, j.state, r.status, r.version, r.created_at, r.updated_at,
       j.finished_at, j.run_at, s.name, s.kind, s.status, s.wake_at, s.result
FROM workflow_runs r
-- CROSS JOIN: SQLite's join-order hint, walked from workflow_runs and never from jobs
-- (whose newer ids may be any number of jobs that are not workflows).
CROSS JOIN jobs j ON j.id = r.job_id
LEFT JOIN workflow_steps s
       ON s.job_id = r.job_id
      AND s.seq = (SELECT max(seq) FROM workflow_steps m WHERE m.job_id = r.job_id)
WHERE r.job_id < :before
  AND (:state IS NULL OR j.state = :state)
  AND (:task IS NULL OR instr(lower(j.task), lower(:task)) > 0)
ORDER BY r.job_id DESC
LIMIT :limit

-- name: workflows_page_by_status
-- The same, of one workflow status: walks workflow_runs_status_idx (migration 0023),
-- so a status few workflows have reads a page, not every workflow.
SELECT j.id, j.task, j.state, r.status, r.version, r.created_at, r.updated_at,
       j.finished_at, j.run_at, s.name, s.kind, s.status, s.wake_at, s.result
FROM workflow_runs r
-- CROSS JOIN: SQLite's join-order hint, walked from workflow_runs and never from jobs
-- (whose newer ids may be any number of jobs that are not workflows).
CROSS JOIN jobs j ON j.id = r.job_id
LEFT JOIN workflow_steps s
       ON s.job_id = r.job_id
      AND s.seq = (SELECT max(seq) FROM workflow_steps m WHERE m.job_id = r.job_id)
WHERE r.status = :status AND r.job_id < :before
  AND (:task IS NULL OR instr(lower(j.task), lower(:task)) > 0)
ORDER BY r.job_id DESC
LIMIT :limit

-- name: workflow_events_list
SELECT id, name, payload, key, created_at, consumed_step
FROM workflow_events WHERE job_id = :job
ORDER BY id DESC
LIMIT :limit

-- name: schedule_runs_history
-- A page of occurrences, newest first, keyset-paged by fire_at (the primary key's
-- second column), each with its job's state, last start and end.
SELECT r.*, j.state AS job_state, j.attempted_at AS job_started_at,
       j.finished_at AS job_finished_at
FROM schedule_runs r
LEFT JOIN jobs j ON j.id = r.job_id
WHERE r.schedule = :name AND (:before IS NULL OR r.fire_at < :before)
ORDER BY r.fire_at DESC
LIMIT :limit

-- name: job_logs_add
-- A batch of one job's records; none for a job that is gone (a row per record, given as
-- a JSON list: one statement per batch).
INSERT INTO job_logs (job_id, attempt, seq, at, level, logger, message)
SELECT :job, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5
FROM json_each(:rows)
WHERE EXISTS (SELECT 1 FROM jobs WHERE id = :job)
ON CONFLICT DO NOTHING

-- name: job_logs_list
-- A job's records after (attempt, seq), in order; attempt 0: every attempt.
SELECT attempt, seq, at, level, logger, message FROM job_logs
WHERE job_id = :job AND (:attempt = 0 OR attempt = :attempt)
  AND (attempt, seq) > (:after_attempt, :after_seq)
ORDER BY attempt, seq
LIMIT :limit

-- name: workflow_live
-- What a workflow page's live refresh redraws (its timeline, what it waits for), in one
-- statement: the job, the instance's status and every step, in the order recorded.
SELECT j.state, j.created_at, j.attempted_at, j.finished_at, j.run_at, r.status,
       (SELECT json_group_array(json_array(s.name, s.status, s.result, s.wake_at, s.attempt,
                                           s.updated_at, s.position, s.kind, s.digest,
                                           s.outcome, s.tries, s.started_at, s.seq))
        FROM workflow_steps s WHERE s.job_id = j.id)
FROM jobs j LEFT JOIN workflow_runs r ON r.job_id = j.id
WHERE j.id = :job
