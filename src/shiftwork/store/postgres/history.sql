-- Named queries of the dashboard's history pages (PostgreSQL): the workflows list, a
-- workflow's events, a schedule's occurrences with their jobs.

-- name: workflows_page
-- Newest first, keyset-paged by id (workflow_runs' primary key: a page reads `limit`
-- rows of it, whatever the filters). The current step is the newest recorded one.
SELECT j.id, j.task, j.state, r.status, r.version, r.created_at, r.updated_at,
       j.finished_at, j.run_at, s.name, s.kind, s.status, s.wake_at, s.result
FROM {schema}.workflow_runs r
JOIN {schema}.jobs j ON j.id = r.job_id
LEFT JOIN LATERAL (SELECT name, kind, status, wake_at, result
                   FROM {schema}.workflow_steps m WHERE m.job_id = r.job_id
                   ORDER BY m.seq DESC LIMIT 1) s ON true
WHERE (%(before)s::bigint IS NULL OR r.job_id < %(before)s::bigint)
  AND (%(status)s::text IS NULL OR r.status = %(status)s::text OR j.state = %(status)s::text)
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
