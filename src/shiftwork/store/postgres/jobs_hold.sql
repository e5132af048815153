-- Named queries of holds and edits (jobs/hold.py): hold, release, run now, and the edit
-- of a job not running. Each names the states it moves from; `held` is never claimed
-- (no claim statement names it).

-- name: jobs_hold_waiting
UPDATE {schema}.jobs SET state = 'held'
WHERE id = ANY(%(ids)s::bigint[]) AND state IN ('scheduled', 'available', 'retrying')
RETURNING id

-- name: jobs_hold_running
-- Its attempt runs on; the completion holds it if it would run again (jobs_complete_many).
UPDATE {schema}.jobs SET hold_requested = true
WHERE id = ANY(%(ids)s::bigint[]) AND state = 'running'
RETURNING id

-- name: jobs_release_held
-- Back where it belongs: scheduled while its run_at is ahead, else due. A workflow woken
-- while held (an event came) is due at once.
UPDATE {schema}.jobs
SET state = CASE WHEN run_at > {now} AND NOT wake_requested THEN 'scheduled'
                 ELSE 'available' END,
    run_at = CASE WHEN wake_requested THEN least(run_at, {now}) ELSE run_at END,
    hold_requested = false
WHERE id = ANY(%(ids)s::bigint[]) AND state = 'held'
RETURNING id

-- name: jobs_release_running
UPDATE {schema}.jobs SET hold_requested = false
WHERE id = ANY(%(ids)s::bigint[]) AND state = 'running' AND hold_requested
RETURNING id

-- name: jobs_run_now
UPDATE {schema}.jobs SET state = 'available', run_at = {now}, hold_requested = false
WHERE id = ANY(%(ids)s::bigint[]) AND state IN ('scheduled', 'available', 'retrying', 'held')
RETURNING id

-- name: jobs_update_waiting
-- A scheduled or due job follows its new run_at; a retrying or held one keeps its state.
UPDATE {schema}.jobs
SET run_at = coalesce(%(run_at)s::timestamptz, run_at),
    priority = coalesce(%(priority)s::smallint, priority),
    queue = coalesce(%(queue)s::text, queue),
    state = CASE WHEN state IN ('scheduled', 'available')
                 THEN CASE WHEN coalesce(%(run_at)s::timestamptz, run_at) > {now}
                           THEN 'scheduled' ELSE 'available' END
                 ELSE state END
WHERE id = %(id)s::bigint AND state IN ('scheduled', 'available', 'retrying', 'held')
RETURNING id
