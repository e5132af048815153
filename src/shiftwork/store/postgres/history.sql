-- Named queries of the dashboard's history pages (PostgreSQL): the workflows list, a
-- workflow's events, a schedule's occurrences with their jobs.

-- name: workflows_page
-- Newest first, keyset-paged by id (walking workflow_runs' primary key: a page reads
-- `limit` rows of it without a filter, more with one). The current step is the newest
-- recorded one. `state`: the job's state.
-- `before` is never NULL (the first page gives the largest id): with `:before IS NULL OR`
-- the generic plan of the prepared statement joined every row (94 ms at 100,000).
SELECT j.id, j.task, j.state, r.status, r.version, r.created_at, r.updated_at,
       j.finished_at, j.run_at, s.name, s.kind, s.status, s.wake_at, s.result
FROM {schema}.workflow_runs r
-- Walked from workflow_runs, never from jobs (OFFSET 0 keeps the planner from flattening
-- this into a join it may drive from jobs' primary key: through every newer job that is
-- not a workflow, 150 ms a page with 50,000 of them).
CROSS JOIN LATERAL (SELECT id, task, state, finished_at, run_at FROM {schema}.jobs
                    WHERE id = r.job_id OFFSET 0) j
LEFT JOIN LATERAL (SELECT name, kind, status, wake_at, result
                   FROM {schema}.workflow_steps m WHERE m.job_id = r.job_id
                   ORDER BY m.seq DESC LIMIT 1) s ON true
WHERE r.job_id < %(before)s::bigint
  AND (%(state)s::text IS NULL OR j.state = %(state)s::text)
  AND (%(task)s::text IS NULL OR strpos(lower(j.task), lower(%(task)s::text)) > 0)
ORDER BY r.job_id DESC
LIMIT %(limit)s

-- name: workflows_page_by_status
-- The same, of one workflow status: walks workflow_runs_status_idx (migration 0023),
-- so a status few workflows have reads a page, not every workflow.
SELECT j.id, j.task, j.state, r.status, r.version, r.created_at, r.updated_at,
       j.finished_at, j.run_at, s.name, s.kind, s.status, s.wake_at, s.result
FROM {schema}.workflow_runs r
-- Walked from workflow_runs, never from jobs (OFFSET 0 keeps the planner from flattening
-- this into a join it may drive from jobs' primary key: through every newer job that is
-- not a workflow, 150 ms a page with 50,000 of them).
CROSS JOIN LATERAL (SELECT id, task, state, finished_at, run_at FROM {schema}.jobs
                    WHERE id = r.job_id OFFSET 0) j
LEFT JOIN LATERAL (SELECT name, kind, status, wake_at, result
                   FROM {schema}.workflow_steps m WHERE m.job_id = r.job_id
                   ORDER BY m.seq DESC LIMIT 1) s ON true
WHERE r.status = %(status)s::text AND r.job_id < %(before)s::bigint
  AND (%(task)s::text IS NULL OR strpos(lower(j.task), lower(%(task)s::text)) > 0)
ORDER BY r.job_id DESC
LIMIT %(limit)s

-- name: workflow_events_list
SELECT id, name, payload, key, created_at, consumed_step
FROM {schema}.workflow_events WHERE job_id = %(job)s
ORDER BY id DESC
LIMIT %(limit)s

-- name: schedule_runs_history
-- A page of occurrences, newest first, keyset-paged by fire_at (the primary key's
-- second column), each with its job's state, last start and end.
SELECT r.*, j.state AS job_state, j.attempted_at AS job_started_at,
       j.finished_at AS job_finished_at
FROM {schema}.schedule_runs r
LEFT JOIN {schema}.jobs j ON j.id = r.job_id
WHERE r.schedule = %(name)s AND (%(before)s::timestamptz IS NULL OR r.fire_at < %(before)s::timestamptz)
ORDER BY r.fire_at DESC
LIMIT %(limit)s

-- name: job_logs_add
-- A batch of one job's records; none for a job that is gone (one statement per batch).
INSERT INTO {schema}.job_logs (job_id, attempt, seq, at, level, logger, message)
SELECT %(job)s, u.attempt, u.seq, u.at, u.level, u.logger, u.message
FROM unnest(%(attempts)s::integer[], %(seqs)s::integer[], %(ats)s::timestamptz[],
            %(levels)s::text[], %(loggers)s::text[], %(messages)s::text[])
     AS u (attempt, seq, at, level, logger, message)
WHERE EXISTS (SELECT 1 FROM {schema}.jobs WHERE id = %(job)s)
ON CONFLICT DO NOTHING

-- name: job_logs_list
-- A job's records after (attempt, seq), in order; attempt 0: every attempt.
SELECT attempt, seq, at, level, logger, message FROM {schema}.job_logs
WHERE job_id = %(job)s AND (%(attempt)s = 0 OR attempt = %(attempt)s)
  AND (attempt, seq) > (%(after_attempt)s, %(after_seq)s)
ORDER BY attempt, seq
LIMIT %(limit)s

-- name: workflow_live
-- What a workflow page's live refresh redraws (its timeline, what it waits for), in one
-- statement: the job, the instance's status and every step, in the order recorded.
SELECT j.state, j.created_at, j.attempted_at, j.finished_at, j.run_at, r.status,
       (SELECT json_agg(json_build_array(s.name, s.status, s.result,
                                         extract(epoch FROM s.wake_at), s.attempt,
                                         extract(epoch FROM s.updated_at), s.position, s.kind,
                                         s.digest, s.outcome, s.tries,
                                         extract(epoch FROM s.started_at), s.seq)
                        ORDER BY s.seq)
        FROM {schema}.workflow_steps s WHERE s.job_id = j.id)
FROM {schema}.jobs j LEFT JOIN {schema}.workflow_runs r ON r.job_id = j.id
WHERE j.id = %(job)s
