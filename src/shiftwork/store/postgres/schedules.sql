-- Named queries for schedules (PostgreSQL). Every write the leader makes runs in a
-- transaction that first passes schedule_leader_check.

-- name: schedule_leader_check
-- No row lock: a leader paused inside its transaction must not block an election.
SELECT {now} AS now FROM {schema}.leaders
WHERE name = %(leader)s AND owner = %(owner)s AND term = %(term)s AND expires_at > {now}

-- name: schedule_leader_recheck
-- Just before commit, on the wall clock (now() is the transaction's start): a leader
-- that was paused or cut off mid-transaction finds its lease gone and rolls back.
SELECT 1 AS held FROM {schema}.leaders
WHERE name = %(leader)s AND owner = %(owner)s AND term = %(term)s
  AND expires_at > coalesce(%(now)s::timestamptz, clock_timestamp())

-- name: schedule_now
SELECT {now} AS now

-- name: schedules_lock_all
-- The same key as the trigger that deletes the reconcile's fingerprint (migration 0017).
SELECT pg_advisory_xact_lock(hashtextextended('shiftwork.schedules', 0))

-- name: schedules_exist
SELECT EXISTS (SELECT 1 FROM {schema}.schedules) AS any

-- name: schedules_reconciled_get
-- The start-up reconcile's fast path: this declared set was the last reconciled, and
-- nothing has written a definition since (a trigger deletes the row: migration 0017).
SELECT 1 AS hit FROM {schema}.schedules_reconciled WHERE fingerprint = %(fingerprint)s

-- name: schedules_reconciled_set
INSERT INTO {schema}.schedules_reconciled (id, fingerprint, reconciled_at)
VALUES (1, %(fingerprint)s, {now})
ON CONFLICT (id) DO UPDATE SET fingerprint = excluded.fingerprint,
                               reconciled_at = excluded.reconciled_at

-- name: schedules_declared
-- What the reconcile compares: no arguments or cursors read (decoding 100,000 jsonb
-- arguments took a third of a reconcile).
SELECT name, definition_hash, removed_at IS NOT NULL AS removed, origin, cron, tz
FROM {schema}.schedules ORDER BY name

-- name: schedules_insert_batch
-- New code schedules (a JSON array of definitions, each with its first fire instant).
-- args comes as JSON text, as the definition carries it.
INSERT INTO {schema}.schedules (name, cron, tz, task, args, queue, priority, max_attempts,
    timeout, catchup, catchup_window, catchup_cap, overlap, starting_deadline, jitter,
    expect_success_within, pause_on_failure, definition_hash, next_fire_at, created_at,
    updated_at, expect_items, expect_items_rule)
SELECT x.name, x.cron, x.tz, x.task, x.args::jsonb, x.queue, x.priority, x.max_attempts,
       x.timeout, x.catchup, x.catchup_window, x.catchup_cap, x.overlap,
       x.starting_deadline, x.jitter, x.expect_success_within, x.pause_on_failure,
       x.definition_hash, x.next_fire_at, {now}, {now}, x.expect_items, x.expect_items_rule
FROM jsonb_to_recordset(%(rows)s::jsonb)
    AS x(name text, cron text, tz text, task text, args text, queue text, priority smallint,
         max_attempts integer, timeout double precision, catchup text,
         catchup_window double precision, catchup_cap integer, overlap text,
         starting_deadline double precision, jitter double precision,
         expect_success_within double precision, pause_on_failure boolean,
         definition_hash text, next_fire_at timestamptz, expect_items bigint,
         expect_items_rule text)

-- name: schedules_update_definition_batch
-- Changed and revived definitions; a row's cursor is replaced only when reset_cursor.
UPDATE {schema}.schedules s
SET cron = x.cron, tz = x.tz, task = x.task, args = x.args::jsonb, queue = x.queue,
    priority = x.priority, max_attempts = x.max_attempts, timeout = x.timeout,
    catchup = x.catchup, catchup_window = x.catchup_window, catchup_cap = x.catchup_cap,
    overlap = x.overlap, starting_deadline = x.starting_deadline, jitter = x.jitter,
    expect_success_within = x.expect_success_within, pause_on_failure = x.pause_on_failure,
    expect_items = x.expect_items, expect_items_rule = x.expect_items_rule,
    definition_hash = x.definition_hash, updated_at = {now}, removed_at = NULL,
    next_fire_at = CASE WHEN x.reset_cursor THEN x.next_fire_at ELSE s.next_fire_at END
FROM jsonb_to_recordset(%(rows)s::jsonb)
    AS x(name text, cron text, tz text, task text, args text, queue text, priority smallint,
         max_attempts integer, timeout double precision, catchup text,
         catchup_window double precision, catchup_cap integer, overlap text,
         starting_deadline double precision, jitter double precision,
         expect_success_within double precision, pause_on_failure boolean,
         definition_hash text, reset_cursor boolean, next_fire_at timestamptz,
         expect_items bigint, expect_items_rule text)
WHERE s.name = x.name

-- name: schedules_mark_removed_batch
UPDATE {schema}.schedules SET removed_at = {now}, updated_at = {now}
WHERE name IN (SELECT jsonb_array_elements_text(%(names)s::jsonb)) AND removed_at IS NULL

-- name: schedules_set_origin_batch
UPDATE {schema}.schedules SET origin = %(origin)s
WHERE name IN (SELECT jsonb_array_elements_text(%(names)s::jsonb))

-- name: schedules_get
SELECT * FROM {schema}.schedules WHERE name = %(name)s

-- name: schedules_lock_one
SELECT * FROM {schema}.schedules WHERE name = %(name)s FOR UPDATE

-- name: schedules_try_lock_one
-- The leader skips a schedule another transaction is deciding (e.g. a paused ex-leader).
SELECT * FROM {schema}.schedules WHERE name = %(name)s FOR UPDATE SKIP LOCKED

-- name: schedules_due
-- Three index-driven parts, so a schedule that is not due is never read: cursors due
-- (schedules_due_idx), nothing decided yet or a catch-up override (schedules_undecided_idx),
-- buffered runs that may be released (schedule_runs_pending_idx).
SELECT {now} AS now, d.name FROM (
    SELECT s.name, s.next_fire_at FROM {schema}.schedules s
    WHERE s.removed_at IS NULL AND NOT s.paused AND s.next_fire_at <= {now}
    UNION
    SELECT s.name, s.next_fire_at FROM {schema}.schedules s
    WHERE s.removed_at IS NULL AND NOT s.paused
      AND (s.next_fire_at IS NULL OR s.catchup_override IS NOT NULL)
    UNION
    SELECT s.name, s.next_fire_at
    FROM (SELECT DISTINCT p.schedule FROM {schema}.schedule_runs p
          WHERE p.status = 'pending') p
    JOIN {schema}.schedules s ON s.name = p.schedule
    WHERE s.removed_at IS NULL AND NOT s.paused
      AND (NOT EXISTS (SELECT 1 FROM {schema}.schedule_runs r
                       JOIN {schema}.jobs j ON j.id = r.job_id
                       WHERE r.schedule = s.name AND r.status = 'enqueued'
                         AND j.state IN ('scheduled', 'available', 'running', 'retrying', 'held'))
           OR (s.overlap IN ('cancel_other', 'terminate_other')
               AND EXISTS (SELECT 1 FROM {schema}.schedule_runs r
                           JOIN {schema}.jobs j ON j.id = r.job_id
                           WHERE r.schedule = s.name AND r.status = 'enqueued'
                             AND j.state IN ('scheduled', 'available', 'running', 'retrying', 'held')
                             AND NOT j.cancel_requested)))
) d
ORDER BY d.next_fire_at NULLS FIRST, d.name

-- name: schedules_next_fire
-- The earliest cursor still ahead (schedules_due_idx: the first entry after now), so
-- the leader wakes at that instant instead of up to a pass interval after it.
SELECT {now} AS now, min(s.next_fire_at) AS next_fire_at FROM {schema}.schedules s
WHERE s.removed_at IS NULL AND NOT s.paused AND s.next_fire_at > {now}

-- name: schedules_try_lock_batch
-- One firing transaction's schedules (a JSON array of names), in one statement; those
-- another transaction is deciding are skipped (the next pass finds them again).
-- args as text: the definition carries it as JSON text (no parse and re-encode).
SELECT name, cron, tz, task, args::text AS args, queue, priority, max_attempts, timeout,
       catchup, catchup_window, catchup_cap, overlap, starting_deadline, jitter,
       expect_success_within, pause_on_failure, next_fire_at, paused, catchup_override
FROM {schema}.schedules
WHERE name IN (SELECT jsonb_array_elements_text(%(names)s::jsonb))
ORDER BY name
FOR UPDATE SKIP LOCKED

-- name: schedule_runs_open_batch
-- Per name, an index probe each (OFFSET 0 keeps the planner from flattening the
-- LATERAL into a hash join that reads every open occurrence: 48 ms a batch at 100,000).
SELECT r.schedule, r.fire_at, r.kind, r.status, r.job_id, j.state AS job_state,
       coalesce(j.cancel_requested, false) AS cancel_requested
FROM jsonb_array_elements_text(%(names)s::jsonb) AS n(name)
CROSS JOIN LATERAL (SELECT * FROM {schema}.schedule_runs r
                    WHERE r.schedule = n.name AND r.status IN ('pending', 'enqueued')
                    OFFSET 0) r
LEFT JOIN {schema}.jobs j ON j.id = r.job_id
ORDER BY r.schedule, r.fire_at

-- name: schedule_runs_insert_batch
-- Occurrences of many schedules in one statement, with their jobs' ids (inserted just
-- before); the primary key keeps each (schedule, fire instant) once: only the rows
-- inserted are new (the caller deletes the jobs made for the others). A first row
-- counts them; the inserted rows follow only when that is not all of them (1,000 rows
-- read back and decoded for nothing, per batch, otherwise).
WITH ins AS (
    INSERT INTO {schema}.schedule_runs (schedule, fire_at, kind, status, reason, run_at,
                                        recorded_at, term, dms, job_id)
    SELECT x.schedule, x.fire_at, x.kind, x.status, x.reason, x.run_at, {now}, %(term)s,
           x.dms, x.job_id
    FROM jsonb_to_recordset(%(rows)s::jsonb) AS x(schedule text, fire_at timestamptz,
                                                 kind text, status text, reason text,
                                                 run_at timestamptz, dms text, job_id bigint)
    ON CONFLICT (schedule, fire_at) DO NOTHING
    RETURNING schedule, fire_at
), n AS (SELECT count(*) AS inserted FROM ins)
SELECT NULL::text AS schedule, NULL::timestamptz AS fire_at, n.inserted FROM n
UNION ALL
SELECT ins.schedule, ins.fire_at, NULL FROM ins, n WHERE n.inserted < %(count)s

-- name: schedule_jobs_discard
-- Jobs made in this transaction for occurrences that turned out to be recorded already.
DELETE FROM {schema}.jobs WHERE id IN (SELECT jsonb_array_elements_text(%(ids)s::jsonb)::bigint)

-- name: schedule_runs_set_job_batch
UPDATE {schema}.schedule_runs r SET job_id = x.job_id
FROM jsonb_to_recordset(%(rows)s::jsonb) AS x(schedule text, fire_at timestamptz, job_id bigint)
WHERE r.schedule = x.schedule AND r.fire_at = x.fire_at

-- name: schedules_advance_batch
-- Cursors of many schedules; a row whose cursor is not the one planned from is left
-- alone and not counted (the caller rolls back: never half a plan). One row: the count.
WITH moved AS (
    UPDATE {schema}.schedules s
    SET next_fire_at = x.cursor,
        catchup_override = CASE WHEN x.clear_override THEN NULL ELSE s.catchup_override END,
        missed_unrecorded = s.missed_unrecorded + x.missed_unrecorded
    FROM jsonb_to_recordset(%(rows)s::jsonb) AS x(name text, cursor timestamptz,
                                                 old_cursor timestamptz,
                                                 clear_override boolean,
                                                 missed_unrecorded bigint)
    WHERE s.name = x.name AND s.next_fire_at IS NOT DISTINCT FROM x.old_cursor
    RETURNING 1
)
SELECT count(*) AS moved FROM moved

-- name: schedule_runs_release
UPDATE {schema}.schedule_runs
SET status = %(status)s, reason = %(reason)s, run_at = %(run_at)s, term = %(term)s,
    finished_at = %(finished_at)s
WHERE schedule = %(name)s AND fire_at = %(fire_at)s AND status = 'pending'
RETURNING fire_at

-- name: schedule_runs_revive
UPDATE {schema}.schedule_runs
SET status = %(status)s, kind = 'backfill', reason = %(reason)s, run_at = %(run_at)s,
    finished_at = NULL, dms = %(dms)s, dms_at = NULL
WHERE schedule = %(name)s AND fire_at = %(fire_at)s AND status IN ('missed', 'skipped')
RETURNING fire_at

-- name: schedule_runs_sync
-- A success's items come along; its items check is 'none' at once when the schedule
-- expects nothing (only runs that will be judged stay in schedule_runs_items_due_idx).
UPDATE {schema}.schedule_runs r
SET status = CASE j.state WHEN 'succeeded' THEN 'succeeded' WHEN 'dead' THEN 'failed'
                          ELSE 'cancelled' END,
    finished_at = j.finished_at, items = j.items,
    items_check = CASE WHEN j.state = 'succeeded' AND NOT EXISTS (
                           SELECT 1 FROM {schema}.schedules s WHERE s.name = r.schedule
                             AND (s.expect_items IS NOT NULL OR s.expect_items_rule IS NOT NULL))
                       THEN 'none' END
FROM {schema}.jobs j
WHERE r.status = 'enqueued' AND j.id = r.job_id AND j.state IN ('succeeded', 'dead', 'cancelled')
RETURNING r.schedule, r.fire_at, r.status, r.job_id

-- name: schedule_runs_sync_pruned
UPDATE {schema}.schedule_runs r
SET status = 'cancelled', reason = 'its job was deleted before its outcome was recorded',
    finished_at = {now}
WHERE r.status = 'enqueued' AND r.job_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM {schema}.jobs j WHERE j.id = r.job_id)
RETURNING r.schedule, r.fire_at, r.status, r.job_id

-- name: schedule_runs_sync_reopened
UPDATE {schema}.schedule_runs r
SET status = 'enqueued', finished_at = NULL
FROM {schema}.jobs j
WHERE r.status IN ('failed', 'cancelled') AND j.id = r.job_id
  AND j.state IN ('scheduled', 'available', 'running', 'retrying', 'held')
RETURNING r.schedule, r.fire_at, r.status, r.job_id

-- name: schedules_pause_on_failure
UPDATE {schema}.schedules
SET paused = true, paused_reason = %(reason)s, updated_at = {now}
WHERE name = %(name)s AND pause_on_failure AND NOT paused
RETURNING name

-- name: schedule_runs_past_deadline
-- Driven by the schedules that have a deadline (MATERIALIZED, then an index probe per
-- schedule): with 100,000 open occurrences and fresh, unanalyzed tables the plain join
-- was once planned as a nested loop that ran for minutes.
WITH d AS MATERIALIZED (
    SELECT name, starting_deadline FROM {schema}.schedules
    WHERE starting_deadline IS NOT NULL
)
SELECT r.schedule, r.fire_at, r.job_id, d.starting_deadline
FROM d
CROSS JOIN LATERAL (SELECT * FROM {schema}.schedule_runs r
                    WHERE r.schedule = d.name AND r.status = 'enqueued' OFFSET 0) r
JOIN {schema}.jobs j ON j.id = r.job_id
WHERE -- from the fire instant, or for an occurrence taken on time from when the leader
      -- recorded it: a burst's own processing never makes a run miss (scheduling-policies.md)
      CASE WHEN r.kind = 'cron' THEN greatest(r.fire_at, r.recorded_at) ELSE r.fire_at END
      + make_interval(secs => d.starting_deadline) < {now}
  -- occurrences a person asked for (trigger, backfill) have no starting deadline
  AND r.kind NOT IN ('trigger', 'backfill')
  AND j.state IN ('scheduled', 'available') AND j.attempt = 0
ORDER BY r.fire_at
LIMIT 1000

-- name: schedule_job_cancel_unstarted
UPDATE {schema}.jobs
SET state = 'cancelled', finished_at = {now},
    errors = errors || jsonb_build_array(jsonb_build_object(
        'attempt', 0, 'kind', 'starting_deadline', 'type', 'StartingDeadline',
        'message', %(message)s::text, 'at', {now}))
WHERE id = %(job_id)s AND state IN ('scheduled', 'available') AND attempt = 0
RETURNING id

-- name: schedule_runs_mark_missed
UPDATE {schema}.schedule_runs
SET status = 'missed', reason = %(reason)s, finished_at = {now}
WHERE schedule = %(name)s AND fire_at = %(fire_at)s AND status = 'enqueued'

-- name: schedule_runs_dms_due
SELECT r.schedule, r.fire_at, r.status, r.job_id, r.reason, s.expect_success_within,
       EXISTS (SELECT 1 FROM {schema}.schedule_runs ok
               WHERE ok.schedule = r.schedule AND ok.status = 'succeeded'
                 AND ok.finished_at >= r.fire_at
                 AND ok.finished_at <= r.fire_at
                     + make_interval(secs => s.expect_success_within)) AS ok
FROM {schema}.schedule_runs r JOIN {schema}.schedules s ON s.name = r.schedule
WHERE r.dms IS NULL AND s.expect_success_within IS NOT NULL
  AND r.fire_at + make_interval(secs => s.expect_success_within) <= {now}
ORDER BY r.fire_at
LIMIT 1000

-- name: schedule_runs_dms_set
UPDATE {schema}.schedule_runs SET dms = %(dms)s, dms_at = {now}
WHERE schedule = %(name)s AND fire_at = %(fire_at)s AND dms IS NULL
RETURNING fire_at

-- name: schedule_runs_items_due
-- Succeeded runs of schedules that expect items, not judged yet (driven by those
-- schedules, then the partial index per schedule, as schedule_runs_past_deadline).
WITH d AS MATERIALIZED (
    SELECT name, expect_items, expect_items_rule FROM {schema}.schedules
    WHERE expect_items IS NOT NULL OR expect_items_rule IS NOT NULL
)
SELECT r.schedule, r.fire_at, r.job_id, r.items, d.expect_items, d.expect_items_rule,
       extract(epoch FROM j.finished_at - j.attempted_at)::float8 AS duration
FROM d
CROSS JOIN LATERAL (SELECT * FROM {schema}.schedule_runs r
                    WHERE r.schedule = d.name AND r.items_check IS NULL
                      AND r.status = 'succeeded' OFFSET 0) r
LEFT JOIN {schema}.jobs j ON j.id = r.job_id
ORDER BY r.fire_at
LIMIT 1000

-- name: schedule_runs_items_set
UPDATE {schema}.schedule_runs SET items_check = %(verdict)s, items_note = %(note)s
WHERE schedule = %(name)s AND fire_at = %(fire_at)s AND items_check IS NULL
RETURNING fire_at

-- name: schedules_overview
SELECT s.*,
    (SELECT max(r.fire_at) FROM {schema}.schedule_runs r
     WHERE r.schedule = s.name AND r.items_check = 'empty') AS last_empty_fire_at,
    (SELECT max(r.fire_at) FROM {schema}.schedule_runs r
     WHERE r.schedule = s.name AND r.items_check = 'ok') AS last_full_fire_at,
    (SELECT r.items_note FROM {schema}.schedule_runs r
     WHERE r.schedule = s.name AND r.items_check = 'empty'
     ORDER BY r.fire_at DESC LIMIT 1) AS last_empty_note,
    (SELECT max(r.fire_at) FROM {schema}.schedule_runs r
     WHERE r.schedule = s.name AND r.job_id IS NOT NULL) AS last_fire_at,
    (SELECT max(r.finished_at) FROM {schema}.schedule_runs r
     WHERE r.schedule = s.name AND r.status = 'succeeded') AS last_success_at,
    (SELECT max(r.fire_at) FROM {schema}.schedule_runs r
     WHERE r.schedule = s.name AND r.dms = 'late') AS last_late_fire_at,
    (SELECT count(*) FROM {schema}.schedule_runs r
     WHERE r.schedule = s.name AND r.status IN ('missed', 'skipped')) AS not_run,
    (SELECT count(*) FROM {schema}.schedule_runs r
     WHERE r.schedule = s.name AND r.status = 'pending') AS pending,
    {now} AS now
FROM {schema}.schedules s
ORDER BY s.name

-- name: schedule_runs_recent
SELECT * FROM {schema}.schedule_runs
WHERE schedule = %(name)s
ORDER BY fire_at DESC
LIMIT %(limit)s

-- name: schedules_set_paused
UPDATE {schema}.schedules
SET paused = %(paused)s, paused_reason = %(reason)s, updated_at = {now}
WHERE name = %(name)s AND removed_at IS NULL
RETURNING name

-- name: schedules_resume
UPDATE {schema}.schedules
SET paused = false, paused_reason = NULL, next_fire_at = %(cursor)s,
    catchup_override = %(catchup_override)s, updated_at = {now}
WHERE name = %(name)s AND paused
RETURNING name

-- name: schedule_runs_prune
DELETE FROM {schema}.schedule_runs
WHERE status NOT IN ('pending', 'enqueued')
  AND recorded_at < {now} - make_interval(secs => %(older_than)s)
RETURNING schedule  -- counted by the caller
