-- Named queries of holds and edits (jobs/hold.py; see the PostgreSQL file). :ids is a
-- JSON array of ids; times are Unix seconds.

-- name: jobs_hold_waiting
UPDATE jobs SET state = 'held'
WHERE id IN (SELECT value FROM json_each(:ids)) AND state IN ('scheduled', 'available', 'retrying')
RETURNING id

-- name: jobs_hold_running
UPDATE jobs SET hold_requested = 1
WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'running'
RETURNING id

-- name: jobs_release_held
UPDATE jobs
SET state = CASE WHEN run_at > :now AND NOT wake_requested THEN 'scheduled'
                 ELSE 'available' END,
    run_at = CASE WHEN wake_requested THEN min(run_at, :now) ELSE run_at END,
    hold_requested = 0
WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'held'
RETURNING id

-- name: jobs_release_running
UPDATE jobs SET hold_requested = 0
WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'running' AND hold_requested
RETURNING id

-- name: jobs_run_now
UPDATE jobs SET state = 'available', run_at = :now, hold_requested = 0
WHERE id IN (SELECT value FROM json_each(:ids))
  AND state IN ('scheduled', 'available', 'retrying', 'held')
RETURNING id

-- name: jobs_update_waiting
UPDATE jobs
SET run_at = coalesce(:run_at, run_at), priority = coalesce(:priority, priority),
    queue = coalesce(:queue, queue),
    state = CASE WHEN state IN ('scheduled', 'available')
                 THEN CASE WHEN coalesce(:run_at, run_at) > :now THEN 'scheduled'
                           ELSE 'available' END
                 ELSE state END
WHERE id = :id AND state IN ('scheduled', 'available', 'retrying', 'held')
RETURNING id
