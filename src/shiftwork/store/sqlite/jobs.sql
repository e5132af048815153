-- Named queries for SQLite. Times are Unix seconds (REAL); :now is always passed in.

-- name: jobs_insert
INSERT INTO jobs (queue, task, args, state, priority, max_attempts, run_at, created_at,
                  unique_key, timeout, meta)
VALUES (:queue, :task, :args, CASE WHEN :run_at IS NULL OR :run_at <= :now
                                   THEN 'available' ELSE 'scheduled' END,
        :priority, :max_attempts, coalesce(:run_at, :now), :now, :unique_key, :timeout, :meta)
ON CONFLICT (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')
    DO NOTHING
RETURNING id

-- name: jobs_insert_unkeyed
-- One job without a unique key: no conflict to settle, so no index named (an older
-- schema's partial index is not this release's).
INSERT INTO jobs (queue, task, args, state, priority, max_attempts, run_at, created_at,
                  unique_key, timeout, meta)
VALUES (:queue, :task, :args, CASE WHEN :run_at IS NULL OR :run_at <= :now
                                   THEN 'available' ELSE 'scheduled' END,
        :priority, :max_attempts, coalesce(:run_at, :now), :now, :unique_key, :timeout, :meta)
RETURNING id

-- name: jobs_insert_plain
-- Jobs without a unique key, many per statement: one JSON array of rows (state and
-- run_at decided by the caller), unpacked by json_each. One statement instead of an
-- executemany: no per-row parameter binding, ~25% more rows/s. Ids follow from
-- last_insert_rowid (AUTOINCREMENT under the write lock, in array order).
INSERT INTO jobs (queue, task, args, state, priority, max_attempts, run_at, created_at,
                  timeout, meta)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
       json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'),
       json_extract(value, '$[6]'), json_extract(value, '$[7]'), json_extract(value, '$[8]'),
       json_extract(value, '$[9]')
FROM json_each(:rows)
ORDER BY key  -- ids are handed out in this order: keep it the array's

-- name: jobs_insert_uniform
-- Jobs that differ only in their arguments (one task with its own options: the usual
-- bulk call, a group's members), many per statement: the shared columns bound once, the
-- arguments one JSON array of strings. About half the time of jobs_insert_plain's row
-- arrays, whose fields are each extracted from each row. Ids as there.
INSERT INTO jobs (queue, task, args, state, priority, max_attempts, run_at, created_at,
                  timeout, meta)
SELECT :queue, :task, value, :state, :priority, :max_attempts, :run_at, :now, :timeout,
       :meta
FROM json_each(:args)
ORDER BY key

-- name: jobs_insert_uniform_marked
-- The same with one mark for them all (jobs_insert_marked's last four columns).
INSERT INTO jobs (queue, task, args, state, priority, max_attempts, run_at, created_at,
                  timeout, meta, deps_pending, watched, group_id, group_mark)
SELECT :queue, :task, value, :state, :priority, :max_attempts, :run_at, :now, :timeout,
       :meta, :deps_pending, :watched, :group_id, :group_mark
FROM json_each(:args)
ORDER BY key

-- name: jobs_insert_marked
-- The jobs of a graph or a group (store/deps.py), written whole: jobs_insert_plain's
-- columns, then deps_pending, watched, group_id, group_mark.
INSERT INTO jobs (queue, task, args, state, priority, max_attempts, run_at, created_at,
                  timeout, meta, deps_pending, watched, group_id, group_mark)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
       json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'),
       json_extract(value, '$[6]'), json_extract(value, '$[7]'), json_extract(value, '$[8]'),
       json_extract(value, '$[9]'), json_extract(value, '$[10]'),
       json_extract(value, '$[11]'), json_extract(value, '$[12]'),
       json_extract(value, '$[13]')
FROM json_each(:rows)
ORDER BY key

-- name: jobs_find_active_by_key
SELECT id FROM jobs
WHERE unique_key = :key AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')

-- name: jobs_claim
UPDATE jobs
SET state = 'running', attempt = attempt + 1, worker_id = :worker, attempted_at = :now,
    lease_expires_at = :now + :lease
WHERE id IN (
    -- INDEXED BY: walk the claim index in claim order and stop at LIMIT. Left alone, the
    -- planner prefers jobs_waiting_age_idx and sorts every waiting job on each claim.
    SELECT id FROM jobs INDEXED BY jobs_claim_idx
    WHERE queue = :queue
      AND state IN ('available', 'scheduled', 'retrying')
      AND run_at <= :now
      AND (:only_task IS NULL OR task = :only_task)
      AND task NOT IN (SELECT value FROM json_each(:exclude))
      -- a paused queue is skipped (evaluated once per statement: it names no jobs column)
      AND NOT EXISTS (SELECT 1 FROM queue_settings s WHERE s.queue = :queue AND s.paused)
    ORDER BY priority DESC, run_at, id
    LIMIT :limit
)
RETURNING id, task, queue, args, attempt, max_attempts, timeout, checkpoint, meta, priority, run_at,
          uncounted

-- name: jobs_count_running_task
SELECT count(*) FROM jobs WHERE state = 'running' AND task = :task

-- name: jobs_complete_one
UPDATE jobs
-- a hold asked while it ran (app.hold): an attempt that would run again is held
SET state = CASE WHEN hold_requested AND :state IN ('retrying', 'scheduled', 'available')
                 THEN 'held' ELSE :state END,
    hold_requested = 0,
    finished_at = CASE WHEN :state IN ('succeeded', 'dead', 'cancelled') THEN :now END,
    -- a snooze (back to scheduled) runs at once if a wake-up came while it ran
    run_at = CASE WHEN :state = 'scheduled' AND wake_requested THEN :now
                  ELSE coalesce(:run_at, run_at) END,
    wake_requested = 0,
    errors = CASE WHEN :error IS NULL THEN errors ELSE json_insert(errors, '$[#]', json(:error)) END,
    result = :result,
    peak_rss = :peak_rss,  -- a limited attempt's peak resident size (migration 0019)
    items = :items,  -- what this attempt reported (ctx.processed); NULL: it did not say
    lease_expires_at = NULL,
    -- a snoozed run (back to scheduled) is not counted as an attempt
    uncounted = uncounted + CASE WHEN :state = 'scheduled' THEN 1 ELSE 0 END,
    -- a group member's finish, counted into its group by the same transaction (store.py)
    group_mark = CASE WHEN group_mark = 1 AND :state IN ('succeeded', 'dead', 'cancelled')
                      THEN 3 ELSE group_mark END
WHERE id = :id AND attempt = :attempt AND state = 'running'

-- name: jobs_complete_succeeded
-- The common outcome (succeeded, no result): fewer columns to write, positional rows.
UPDATE jobs
SET state = 'succeeded', finished_at = ?, lease_expires_at = NULL, wake_requested = 0,
    result = NULL, items = ?,
    group_mark = CASE WHEN group_mark = 1 THEN 3 ELSE group_mark END
WHERE id = ? AND attempt = ? AND state = 'running'

-- name: jobs_running_attempts
-- watched (dependents, waiters), and the group of a member whose finish is not counted
-- yet: both are resolved in the same transaction (read under the write lock).
SELECT id, attempt, watched, CASE WHEN group_mark = 1 THEN group_id END FROM jobs
WHERE state = 'running' AND id IN (SELECT value FROM json_each(:ids))

-- name: jobs_heartbeat_worker
UPDATE workers SET heartbeat_at = :now WHERE id = :worker

-- name: jobs_heartbeat
-- Only the (id, attempt) pairs the worker holds (:held, a JSON array of pairs): a job
-- it does not know about runs out its lease and is rescued.
-- (The pairs become one ephemeral index, probed per running job of the worker.)
UPDATE jobs SET lease_expires_at = :now + :lease
WHERE worker_id = :worker AND state = 'running'
  AND (id, attempt) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]')
                        FROM json_each(:held))
RETURNING id, attempt, cancel_requested

-- name: jobs_release_unknown
UPDATE jobs
-- (a hold asked while it ran holds it: app.hold)
SET state = CASE WHEN hold_requested THEN 'held' ELSE 'available' END, hold_requested = 0,
    lease_expires_at = NULL, uncounted = uncounted + 1, run_at = :now,
    errors = json_insert(errors, '$[#]', json_object(
        'attempt', attempt, 'kind', 'released', 'type', 'ReplyLost',
        'message', 'claimed by a call whose reply was lost; given back, attempt not counted',
        'at', :now_iso))
WHERE worker_id = :worker AND state = 'running' AND queue = :queue
  AND (id, attempt) NOT IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]')
                            FROM json_each(:held))
RETURNING id

-- name: jobs_written
-- See the Postgres query of the same name. :outcomes is a JSON array of [id, attempt, state].
SELECT j.id FROM jobs j
JOIN json_each(:outcomes) o ON j.id = json_extract(o.value, '$[0]')
WHERE (j.attempt = json_extract(o.value, '$[1]') AND j.state = json_extract(o.value, '$[2]'))
   OR (j.attempt = json_extract(o.value, '$[1]') AND j.state = 'held'
       AND json_extract(o.value, '$[2]') IN ('retrying', 'scheduled', 'available'))
   OR (j.attempt > json_extract(o.value, '$[1]') AND NOT EXISTS (
         SELECT 1 FROM json_each(j.errors) e
         WHERE json_extract(e.value, '$.attempt') = json_extract(o.value, '$[1]')
           AND json_extract(e.value, '$.kind') IN ('lease_expired', 'handed_back', 'released')))

-- name: jobs_rescue_flows
-- Before jobs_rescue, in its transaction: the workflows among the expired jobs (the rule
-- is in the Postgres query): the lost last run of a deciding workflow is noted; one lost
-- while compensating on its last attempt ends the workflow failed.
UPDATE workflow_runs
SET last_attempt = CASE
        WHEN status = 'running' AND began_attempt = (SELECT attempt FROM jobs WHERE id = job_id)
        THEN (SELECT attempt FROM jobs WHERE id = job_id) ELSE last_attempt END,
    status = CASE WHEN status = 'compensating' THEN 'failed' ELSE status END,
    cause = CASE WHEN status = 'compensating' THEN coalesce(cause || '; ', '')
                 || 'its worker died on the last attempt while compensating' ELSE cause END,
    updated_at = :now
WHERE status IN ('running', 'compensating')
  AND job_id IN (SELECT id FROM jobs WHERE state = 'running' AND lease_expires_at < :now
                 AND attempt - uncounted >= max_attempts
                 ORDER BY lease_expires_at LIMIT :limit)
  AND began_attempt = (SELECT attempt FROM jobs WHERE id = job_id)

-- name: jobs_rescue
-- A workflow not yet ended is spared (back, this run not counted): see the Postgres query.
UPDATE jobs
SET state = CASE WHEN x.spared THEN (CASE WHEN jobs.hold_requested THEN 'held' ELSE 'available' END)
                 WHEN jobs.attempt - jobs.uncounted >= jobs.max_attempts THEN 'dead'
                 ELSE (CASE WHEN jobs.hold_requested THEN 'held' ELSE 'available' END) END,
    hold_requested = 0,
    finished_at = CASE WHEN NOT x.spared AND jobs.attempt - jobs.uncounted >= jobs.max_attempts
                       THEN :now END,
    uncounted = jobs.uncounted + x.spared,
    lease_expires_at = NULL,
    errors = json_insert(jobs.errors, '$[#]', json_object(
        'attempt', jobs.attempt, 'kind', 'lease_expired', 'type', 'LeaseExpired',
        'message', 'worker ' || coalesce(jobs.worker_id, '?') || ' stopped renewing its lease',
        'at', :now_iso))
FROM (
    SELECT j.id AS rid, EXISTS (
        SELECT 1 FROM workflow_runs r
        WHERE r.job_id = j.id AND r.status IN ('running', 'compensating')
          AND (r.began_attempt IS NOT j.attempt
               OR (r.status = 'running' AND j.attempt - j.uncounted >= j.max_attempts))
    ) AS spared
    FROM jobs j WHERE j.state = 'running' AND j.lease_expires_at < :now
    ORDER BY j.lease_expires_at LIMIT :limit
) AS x
WHERE jobs.id = x.rid
RETURNING id, state, task, queue, attempt

-- name: jobs_hand_back
-- As the Postgres statement: back at once (shutdown, or a worker that does not register
-- the task); the same reason as the last error record replaces it, counting the times.
UPDATE jobs
-- (a hold asked while it ran holds it: app.hold)
SET state = CASE WHEN hold_requested THEN 'held' ELSE 'available' END, hold_requested = 0,
    lease_expires_at = NULL, uncounted = uncounted + 1, run_at = :now,
    errors = CASE WHEN json_extract(errors, '$[#-1].kind') = :kind
                  THEN json_set(errors, '$[#-1]', json_object(
                      'attempt', attempt, 'kind', :kind, 'type', :type, 'message', :message,
                      'at', :now_iso,
                      'times', coalesce(json_extract(errors, '$[#-1].times'), 1) + 1))
                  ELSE json_insert(errors, '$[#]', json_object(
                      'attempt', attempt, 'kind', :kind, 'type', :type, 'message', :message,
                      'at', :now_iso)) END
WHERE id = :id AND attempt = :attempt AND state = 'running' AND worker_id = :worker

-- name: jobs_get
SELECT * FROM jobs WHERE id = :id

-- name: jobs_list
-- Newest first, each filter optional (NULL: any).
SELECT * FROM jobs
WHERE (:state IS NULL OR state = :state)
  AND (:queue IS NULL OR queue = :queue)
  AND (:task IS NULL OR task = :task)
  AND (:before IS NULL OR id < :before)
ORDER BY id DESC
LIMIT :limit

-- name: jobs_retry
UPDATE jobs
SET state = 'available', run_at = :now, finished_at = NULL,
    max_attempts = max(max_attempts, attempt - uncounted + 1), cancel_requested = 0
WHERE id = :id AND state IN ('dead', 'cancelled', 'retrying', 'scheduled')
RETURNING id

-- name: jobs_cancel_waiting
UPDATE jobs SET state = 'cancelled', finished_at = :now, hold_requested = 0
WHERE id = :id AND state IN ('scheduled', 'available', 'retrying', 'held')
RETURNING id

-- name: jobs_cancel_running
UPDATE jobs SET cancel_requested = 1 WHERE id = :id AND state = 'running' RETURNING id

-- name: jobs_prune
DELETE FROM jobs WHERE id IN (
    SELECT id FROM jobs
    WHERE (state IN ('succeeded', 'cancelled') AND finished_at < :now - :finished)
       OR (state = 'dead' AND finished_at < :now - :dead)
    LIMIT :limit
)

-- name: queues_stats
-- Three arms, each matching a partial index's predicate, so finished history is never read.
WITH waiting AS (
    SELECT queue, sum(run_at <= :now) AS available, sum(run_at > :now) AS scheduled,
           min(CASE WHEN run_at <= :now THEN run_at END) AS oldest
    FROM jobs WHERE state IN ('available', 'scheduled', 'retrying')
    GROUP BY queue
), running AS (
    SELECT queue, count(*) AS running FROM jobs WHERE state = 'running' GROUP BY queue
), dead AS (
    SELECT queue, count(*) AS dead FROM jobs WHERE state = 'dead' GROUP BY queue
), held AS (
    -- held jobs (jobs_held_idx): counted apart, never waiting (no oldest-waiting age)
    SELECT queue, count(*) AS held FROM jobs WHERE state = 'held' GROUP BY queue
)
SELECT q.queue, coalesce(w.available, 0), coalesce(w.scheduled, 0), coalesce(r.running, 0),
       coalesce(d.dead, 0), :now - w.oldest AS oldest_waiting_age,
       coalesce(h.held, 0)
FROM (SELECT queue FROM waiting UNION SELECT queue FROM running UNION SELECT queue FROM dead
      UNION SELECT queue FROM held) q
LEFT JOIN waiting w USING (queue)
LEFT JOIN running r USING (queue)
LEFT JOIN dead d USING (queue)
LEFT JOIN held h USING (queue)

-- name: queues_finished_counts
SELECT queue, sum(state = 'succeeded'), sum(state = 'cancelled')
FROM jobs WHERE state IN ('succeeded', 'cancelled') GROUP BY queue

-- name: workers_upsert
INSERT INTO workers (id, host, pid, queues, tasks, started_at, heartbeat_at)
VALUES (:id, :host, :pid, :queues, :tasks, :now, :now)
ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, queues = excluded.queues,
                               tasks = excluded.tasks

-- name: workers_delete
DELETE FROM workers WHERE id = :id

-- name: workers_list
SELECT id, host, pid, queues, started_at, heartbeat_at, tasks FROM workers ORDER BY started_at

-- name: workers_prune
DELETE FROM workers WHERE heartbeat_at < :now - :stale

-- name: leader_acquire
INSERT INTO leaders AS l (name, owner, term, expires_at)
VALUES (:name, :owner, 1, :now + :ttl)
ON CONFLICT (name) DO UPDATE
SET owner = excluded.owner,
    term = CASE WHEN l.owner = excluded.owner THEN l.term ELSE l.term + 1 END,
    expires_at = excluded.expires_at
WHERE l.owner = excluded.owner OR l.expires_at < :now
RETURNING term

-- name: leader_release
UPDATE leaders SET expires_at = :now - 1 WHERE name = :name AND owner = :owner

-- name: unique_keys_take
-- A key of the unique_keys table (unique_for, unique_states, debounce; migration 0031):
-- inserted, or taken over when its holder no longer holds it (expired, or its job out of
-- the holding states), with job_id 0 until the job is inserted (jobs.py sets it, in the
-- same transaction). No row returned: the key holds. The write lock is held, so the
-- holder read here cannot change before the commit.
INSERT INTO unique_keys (key, job_id, states, expires_at)
VALUES (:key, 0, :states, :expires)
ON CONFLICT (key) DO UPDATE SET job_id = 0, states = excluded.states,
                                expires_at = excluded.expires_at
WHERE NOT ((unique_keys.expires_at IS NULL OR unique_keys.expires_at > :now)
           AND (unique_keys.states IS NULL OR EXISTS (
                SELECT 1 FROM jobs j WHERE j.id = unique_keys.job_id
                  AND instr(',' || unique_keys.states || ',', ',' || j.state || ',') > 0)))
RETURNING key

-- name: unique_keys_holder
SELECT job_id FROM unique_keys WHERE key = :key

-- name: unique_keys_point
-- The key's row names the job just inserted for it, and that job's rule.
UPDATE unique_keys SET job_id = :id, states = :states, expires_at = :expires WHERE key = :key

-- name: jobs_debounce
-- A debounced key's waiting holder takes the new arguments and run_at.
UPDATE jobs SET args = :args, run_at = :run_at
WHERE id = :id AND state IN ('scheduled', 'available', 'retrying', 'held')

-- name: unique_keys_prune
-- Rows of unique_keys that can no longer hold their key: expired, or held while a job is
-- in some states and that job is finished or gone.
DELETE FROM unique_keys WHERE key IN (
    SELECT key FROM unique_keys WHERE expires_at IS NOT NULL AND expires_at < :now
    UNION ALL
    SELECT k.key FROM unique_keys k
    WHERE k.expires_at IS NULL AND NOT EXISTS (
        SELECT 1 FROM jobs j WHERE j.id = k.job_id
          AND j.state IN ('scheduled', 'available', 'running', 'retrying', 'held'))
    LIMIT :limit
)
RETURNING key
