-- Named queries for schedules (SQLite; times are Unix seconds). Every write the leader makes runs in a
-- transaction that first passes schedule_leader_check.

-- name: schedule_leader_check
SELECT :now AS now FROM leaders
WHERE name = :leader AND owner = :owner AND term = :term AND expires_at > :now

-- name: schedule_leader_recheck
-- Just before commit (:now is read afresh for each statement).
SELECT 1 AS held FROM leaders
WHERE name = :leader AND owner = :owner AND term = :term AND expires_at > :now


-- name: schedule_now
SELECT :now AS now

-- name: schedules_lock_all
SELECT 1  -- BEGIN IMMEDIATE already serializes writers

-- name: schedules_exist
SELECT EXISTS (SELECT 1 FROM schedules) AS any

-- name: schedules_reconciled_get
-- The start-up reconcile's fast path: this declared set was the last reconciled, and
-- nothing has written a definition since (triggers delete the row: migration 0017).
SELECT 1 AS hit FROM schedules_reconciled WHERE fingerprint = :fingerprint

-- name: schedules_reconciled_set
INSERT INTO schedules_reconciled (id, fingerprint, reconciled_at)
VALUES (1, :fingerprint, :now)
ON CONFLICT (id) DO UPDATE SET fingerprint = excluded.fingerprint,
                               reconciled_at = excluded.reconciled_at

-- name: schedules_declared
-- What the reconcile compares (no arguments or cursors read).
SELECT name, definition_hash, removed_at IS NOT NULL AS removed, origin, cron, tz
FROM schedules ORDER BY name

-- name: schedules_insert_batch
-- New code schedules (a JSON array of definitions, each with its first fire instant in
-- integer microseconds).
INSERT INTO schedules (name, cron, tz, task, args, queue, priority, max_attempts,
    timeout, catchup, catchup_window, catchup_cap, overlap, starting_deadline, jitter,
    expect_success_within, pause_on_failure, definition_hash, next_fire_at, created_at,
    updated_at, expect_items, expect_items_rule)
SELECT x.value ->> 'name', x.value ->> 'cron', x.value ->> 'tz',
       x.value ->> 'task', x.value ->> 'args', x.value ->> 'queue',
       x.value ->> 'priority', x.value ->> 'max_attempts', x.value ->> 'timeout',
       x.value ->> 'catchup', x.value ->> 'catchup_window', x.value ->> 'catchup_cap',
       x.value ->> 'overlap', x.value ->> 'starting_deadline', x.value ->> 'jitter',
       x.value ->> 'expect_success_within', x.value ->> 'pause_on_failure',
       x.value ->> 'definition_hash',
       (x.value ->> 'next_fire_at') / 1000000.0, :now, :now,
       x.value ->> 'expect_items', x.value ->> 'expect_items_rule'
FROM json_each(:rows) x

-- name: schedules_update_definition_batch
-- Changed and revived definitions; a row's cursor is replaced only when reset_cursor.
UPDATE schedules AS s
SET cron = x.value ->> 'cron', tz = x.value ->> 'tz',
    task = x.value ->> 'task', args = x.value ->> 'args',
    queue = x.value ->> 'queue', priority = x.value ->> 'priority',
    max_attempts = x.value ->> 'max_attempts', timeout = x.value ->> 'timeout',
    catchup = x.value ->> 'catchup', catchup_window = x.value ->> 'catchup_window',
    catchup_cap = x.value ->> 'catchup_cap', overlap = x.value ->> 'overlap',
    starting_deadline = x.value ->> 'starting_deadline', jitter = x.value ->> 'jitter',
    expect_success_within = x.value ->> 'expect_success_within',
    pause_on_failure = x.value ->> 'pause_on_failure',
    expect_items = x.value ->> 'expect_items',
    expect_items_rule = x.value ->> 'expect_items_rule',
    definition_hash = x.value ->> 'definition_hash',
    updated_at = :now, removed_at = NULL,
    next_fire_at = CASE WHEN x.value ->> 'reset_cursor'
                        THEN (x.value ->> 'next_fire_at') / 1000000.0
                        ELSE s.next_fire_at END
FROM json_each(:rows) x
WHERE s.name = x.value ->> 'name'

-- name: schedules_mark_removed_batch
UPDATE schedules SET removed_at = :now, updated_at = :now
WHERE name IN (SELECT value FROM json_each(:names)) AND removed_at IS NULL

-- name: schedules_set_origin_batch
UPDATE schedules SET origin = :origin
WHERE name IN (SELECT value FROM json_each(:names))

-- name: schedules_get
SELECT * FROM schedules WHERE name = :name

-- name: schedules_lock_one
SELECT * FROM schedules WHERE name = :name

-- name: schedules_try_lock_one
-- BEGIN IMMEDIATE already holds the database's write lock.
SELECT * FROM schedules WHERE name = :name

-- name: schedules_due
-- Three index-driven parts, so a schedule that is not due is never read: cursors due
-- (schedules_due_idx), nothing decided yet or a catch-up override (schedules_undecided_idx),
-- buffered runs that may be released (schedule_runs_pending_idx).
SELECT :now AS now, d.name FROM (
    SELECT s.name, s.next_fire_at FROM schedules s INDEXED BY schedules_due_idx
    WHERE s.removed_at IS NULL AND NOT s.paused AND s.next_fire_at <= :now
    UNION
    SELECT s.name, s.next_fire_at FROM schedules s INDEXED BY schedules_undecided_idx
    WHERE s.removed_at IS NULL AND NOT s.paused
      AND (s.next_fire_at IS NULL OR s.catchup_override IS NOT NULL)
    UNION
    SELECT s.name, s.next_fire_at
    FROM (SELECT DISTINCT p.schedule FROM schedule_runs p INDEXED BY schedule_runs_pending_idx
          WHERE p.status = 'pending') p
    JOIN schedules s ON s.name = p.schedule
    WHERE s.removed_at IS NULL AND NOT s.paused
      AND (NOT EXISTS (SELECT 1 FROM schedule_runs r
                       JOIN jobs j ON j.id = r.job_id
                       WHERE r.schedule = s.name AND r.status = 'enqueued'
                         AND j.state IN ('scheduled', 'available', 'running', 'retrying', 'held'))
           OR (s.overlap IN ('cancel_other', 'terminate_other')
               AND EXISTS (SELECT 1 FROM schedule_runs r
                           JOIN jobs j ON j.id = r.job_id
                           WHERE r.schedule = s.name AND r.status = 'enqueued'
                             AND j.state IN ('scheduled', 'available', 'running', 'retrying', 'held')
                             AND NOT j.cancel_requested)))
) d
ORDER BY d.next_fire_at IS NOT NULL, d.next_fire_at, d.name

-- name: schedules_next_fire
-- The earliest cursor still ahead (schedules_due_idx: the first entry after now), so
-- the leader wakes at that instant instead of up to a pass interval after it.
SELECT :now AS now, min(s.next_fire_at) AS next_fire_at FROM schedules s
    INDEXED BY schedules_due_idx
WHERE s.removed_at IS NULL AND NOT s.paused AND s.next_fire_at > :now

-- name: schedules_try_lock_batch
-- One firing transaction's schedules (a JSON array of names); BEGIN IMMEDIATE already
-- holds the database's write lock.
SELECT * FROM schedules
WHERE name IN (SELECT value FROM json_each(:names))
ORDER BY name

-- name: schedule_runs_open_batch
SELECT r.schedule, r.fire_at, r.kind, r.status, r.job_id, j.state AS job_state,
       coalesce(j.cancel_requested, 0) AS cancel_requested
FROM schedule_runs r LEFT JOIN jobs j ON j.id = r.job_id
WHERE r.schedule IN (SELECT value FROM json_each(:names))
  AND r.status IN ('pending', 'enqueued')
ORDER BY r.schedule, r.fire_at

-- name: schedule_runs_insert_batch
-- Occurrences of many schedules in one statement; the primary key keeps each
-- (schedule, fire instant) once: only the rows returned are new (the caller deletes the
-- jobs it made for the others). Instants come as integer microseconds (divided here
-- exactly as Python's timestamp() divides).
INSERT INTO schedule_runs (schedule, fire_at, kind, status, reason, run_at,
                           recorded_at, term, dms, job_id)
SELECT x.value ->> 'schedule', (x.value ->> 'fire_at') / 1000000.0, x.value ->> 'kind',
       x.value ->> 'status', x.value ->> 'reason', (x.value ->> 'run_at') / 1000000.0,
       :now, :term, x.value ->> 'dms', x.value ->> 'job_id'
FROM json_each(:rows) x WHERE true
ON CONFLICT (schedule, fire_at) DO NOTHING
RETURNING schedule, fire_at, NULL AS inserted

-- name: schedule_jobs_discard
-- Jobs made in this transaction for occurrences that turned out to be recorded already.
DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(:ids))

-- name: schedule_runs_set_job_batch
UPDATE schedule_runs AS r SET job_id = x.value ->> 'job_id'
FROM json_each(:rows) x
WHERE r.schedule = x.value ->> 'schedule' AND r.fire_at = (x.value ->> 'fire_at') / 1000000.0

-- name: schedules_advance_batch
-- Cursors of many schedules; a row whose cursor is not the one planned from is left
-- alone and missing from the result (the caller rolls back: never half a plan).
UPDATE schedules AS s
SET next_fire_at = (x.value ->> 'cursor') / 1000000.0,
    catchup_override = CASE WHEN x.value ->> 'clear_override' THEN NULL
                            ELSE s.catchup_override END,
    missed_unrecorded = s.missed_unrecorded + (x.value ->> 'missed_unrecorded')
FROM json_each(:rows) x
WHERE s.name = x.value ->> 'name'
  AND s.next_fire_at IS (x.value ->> 'old_cursor') / 1000000.0
RETURNING name

-- name: schedule_runs_release
UPDATE schedule_runs
SET status = :status, reason = :reason, run_at = :run_at, term = :term,
    finished_at = :finished_at
WHERE schedule = :name AND fire_at = :fire_at AND status = 'pending'
RETURNING fire_at

-- name: schedule_runs_revive
UPDATE schedule_runs
SET status = :status, kind = 'backfill', reason = :reason, run_at = :run_at,
    finished_at = NULL, dms = :dms, dms_at = NULL
WHERE schedule = :name AND fire_at = :fire_at AND status IN ('missed', 'skipped')
RETURNING fire_at

-- name: schedule_runs_sync
-- See the Postgres query: items come along, and 'none' when nothing is expected.
UPDATE schedule_runs AS r
SET status = CASE j.state WHEN 'succeeded' THEN 'succeeded' WHEN 'dead' THEN 'failed'
                          ELSE 'cancelled' END,
    finished_at = j.finished_at, items = j.items,
    items_check = CASE WHEN j.state = 'succeeded' AND NOT EXISTS (
                           SELECT 1 FROM schedules s WHERE s.name = r.schedule
                             AND (s.expect_items IS NOT NULL OR s.expect_items_rule IS NOT NULL))
                       THEN 'none' END
FROM jobs j
WHERE r.status = 'enqueued' AND j.id = r.job_id AND j.state IN ('succeeded', 'dead', 'cancelled')
RETURNING schedule, fire_at, status, job_id

-- name: schedule_runs_sync_pruned
UPDATE schedule_runs AS r
SET status = 'cancelled', reason = 'its job was deleted before its outcome was recorded',
    finished_at = :now
WHERE r.status = 'enqueued' AND r.job_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = r.job_id)
RETURNING schedule, fire_at, status, job_id

-- name: schedule_runs_sync_reopened
UPDATE schedule_runs AS r
SET status = 'enqueued', finished_at = NULL
FROM jobs j
WHERE r.status IN ('failed', 'cancelled') AND j.id = r.job_id
  AND j.state IN ('scheduled', 'available', 'running', 'retrying', 'held')
RETURNING schedule, fire_at, status, job_id

-- name: schedules_pause_on_failure
UPDATE schedules
SET paused = 1, paused_reason = :reason, updated_at = :now
WHERE name = :name AND pause_on_failure AND NOT paused
RETURNING name

-- name: schedule_runs_past_deadline
SELECT r.schedule, r.fire_at, r.job_id, s.starting_deadline
FROM schedule_runs r
JOIN schedules s ON s.name = r.schedule
JOIN jobs j ON j.id = r.job_id
WHERE r.status = 'enqueued' AND s.starting_deadline IS NOT NULL
  -- from the fire instant, or for an occurrence taken on time from when the leader
  -- recorded it: a burst's own processing never makes a run miss (scheduling.md)
  AND CASE WHEN r.kind = 'cron' THEN max(r.fire_at, r.recorded_at) ELSE r.fire_at END
      + s.starting_deadline < :now
  -- occurrences a person asked for (trigger, backfill) have no starting deadline
  AND r.kind NOT IN ('trigger', 'backfill')
  AND j.state IN ('scheduled', 'available') AND j.attempt = 0
ORDER BY r.fire_at
LIMIT 1000

-- name: schedule_job_cancel_unstarted
UPDATE jobs
SET state = 'cancelled', finished_at = :now,
    errors = json_insert(errors, '$[#]', json_object(
        'attempt', 0, 'kind', 'starting_deadline', 'type', 'StartingDeadline',
        'message', :message, 'at', :now))
WHERE id = :job_id AND state IN ('scheduled', 'available') AND attempt = 0
RETURNING id

-- name: schedule_runs_mark_missed
UPDATE schedule_runs
SET status = 'missed', reason = :reason, finished_at = :now
WHERE schedule = :name AND fire_at = :fire_at AND status = 'enqueued'

-- name: schedule_runs_dms_due
SELECT r.schedule, r.fire_at, r.status, r.job_id, r.reason, s.expect_success_within,
       EXISTS (SELECT 1 FROM schedule_runs ok
               WHERE ok.schedule = r.schedule AND ok.status = 'succeeded'
                 AND ok.finished_at >= r.fire_at
                 AND ok.finished_at <= r.fire_at
                     + s.expect_success_within) AS ok
FROM schedule_runs r JOIN schedules s ON s.name = r.schedule
WHERE r.dms IS NULL AND s.expect_success_within IS NOT NULL
  AND r.fire_at + s.expect_success_within <= :now
ORDER BY r.fire_at
LIMIT 1000

-- name: schedule_runs_dms_set
UPDATE schedule_runs SET dms = :dms, dms_at = :now
WHERE schedule = :name AND fire_at = :fire_at AND dms IS NULL
RETURNING fire_at

-- name: schedule_runs_items_due
-- Succeeded runs of schedules that expect items, not judged yet.
SELECT r.schedule, r.fire_at, r.job_id, r.items, s.expect_items, s.expect_items_rule,
       j.finished_at - j.attempted_at AS duration
FROM schedules s
JOIN schedule_runs r INDEXED BY schedule_runs_items_due_idx
  ON r.schedule = s.name AND r.items_check IS NULL AND r.status = 'succeeded'
LEFT JOIN jobs j ON j.id = r.job_id
WHERE s.expect_items IS NOT NULL OR s.expect_items_rule IS NOT NULL
ORDER BY r.fire_at
LIMIT 1000

-- name: schedule_runs_items_set
UPDATE schedule_runs SET items_check = :verdict, items_note = :note
WHERE schedule = :name AND fire_at = :fire_at AND items_check IS NULL
RETURNING fire_at

-- name: schedules_overview
SELECT s.*,
    (SELECT max(r.fire_at) FROM schedule_runs r
     WHERE r.schedule = s.name AND r.items_check = 'empty') AS last_empty_fire_at,
    (SELECT max(r.fire_at) FROM schedule_runs r
     WHERE r.schedule = s.name AND r.items_check = 'ok') AS last_full_fire_at,
    (SELECT r.items_note FROM schedule_runs r
     WHERE r.schedule = s.name AND r.items_check = 'empty'
     ORDER BY r.fire_at DESC LIMIT 1) AS last_empty_note,
    (SELECT max(r.fire_at) FROM schedule_runs r
     WHERE r.schedule = s.name AND r.job_id IS NOT NULL) AS last_fire_at,
    (SELECT max(r.finished_at) FROM schedule_runs r
     WHERE r.schedule = s.name AND r.status = 'succeeded') AS last_success_at,
    (SELECT max(r.fire_at) FROM schedule_runs r
     WHERE r.schedule = s.name AND r.dms = 'late') AS last_late_fire_at,
    (SELECT count(*) FROM schedule_runs r
     WHERE r.schedule = s.name AND r.status IN ('missed', 'skipped')) AS not_run,
    (SELECT count(*) FROM schedule_runs r
     WHERE r.schedule = s.name AND r.status = 'pending') AS pending,
    :now AS now
FROM schedules s
ORDER BY s.name

-- name: schedule_runs_recent
SELECT * FROM schedule_runs
WHERE schedule = :name
ORDER BY fire_at DESC
LIMIT :limit

-- name: schedules_set_paused
UPDATE schedules
SET paused = :paused, paused_reason = :reason, updated_at = :now
WHERE name = :name AND removed_at IS NULL
RETURNING name

-- name: schedules_resume
UPDATE schedules
SET paused = 0, paused_reason = NULL, next_fire_at = :cursor,
    catchup_override = :catchup_override, updated_at = :now
WHERE name = :name AND paused
RETURNING name

-- name: schedule_runs_prune
DELETE FROM schedule_runs
WHERE status NOT IN ('pending', 'enqueued')
  AND recorded_at < :now - :older_than
RETURNING schedule  -- counted by the caller
