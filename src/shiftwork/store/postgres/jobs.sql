-- Named queries for PostgreSQL. {schema} is the quoted schema name; {now} is the
-- injected instant when a fake clock is in use, else the database's now().

-- name: jobs_insert
WITH input AS (
    SELECT * FROM unnest(
        %(tasks)s::text[], %(queues)s::text[], %(args)s::jsonb[], %(priorities)s::smallint[],
        %(max_attempts)s::int[], %(run_ats)s::timestamptz[], %(unique_keys)s::text[],
        %(timeouts)s::float8[], %(metas)s::jsonb[]
    ) WITH ORDINALITY AS t(task, queue, args, priority, max_attempts, run_at, unique_key,
                           timeout, meta, ord)
)
INSERT INTO {hot} (queue, task, args, state, priority, max_attempts, run_at,
                   created_at, unique_key, timeout, meta)
SELECT queue, task, args,
       CASE WHEN run_at IS NULL OR run_at <= {now} THEN 'available' ELSE 'scheduled' END,
       priority, max_attempts, coalesce(run_at, {now}), {now}, unique_key, timeout, meta
FROM input ORDER BY ord
ON CONFLICT (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')
    DO NOTHING
RETURNING id, unique_key

-- name: jobs_stage_create
-- Many keyed jobs arrive by binary COPY into this table of the transaction, then one
-- INSERT ... SELECT applies the unique key (jobs_insert_staged), instead of 9 array
-- parameters that psycopg dumps element by element in Python: 1,000 keyed jobs took
-- 31-40 ms that way, 13-14 ms staged. pg_temp: never a table of the search path.
CREATE TEMP TABLE pg_temp.shiftwork_stage (ord int4, task text, queue text, args jsonb,
    priority int2, max_attempts int4, run_at timestamptz, unique_key text, timeout float8,
    meta jsonb) ON COMMIT DROP

-- name: jobs_stage_copy
COPY pg_temp.shiftwork_stage (ord, task, queue, args, priority, max_attempts, run_at,
                              unique_key, timeout, meta) FROM STDIN (FORMAT BINARY)

-- name: jobs_insert_staged
-- jobs_insert, from the staged rows.
INSERT INTO {hot} (queue, task, args, state, priority, max_attempts, run_at,
                   created_at, unique_key, timeout, meta)
SELECT queue, task, args,
       CASE WHEN run_at IS NULL OR run_at <= {now} THEN 'available' ELSE 'scheduled' END,
       priority, max_attempts, coalesce(run_at, {now}), {now}, unique_key, timeout, meta
FROM pg_temp.shiftwork_stage ORDER BY ord
ON CONFLICT (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')
    DO NOTHING
RETURNING id, unique_key

-- name: jobs_stage_drop
-- At once, not at commit: the same transaction may stage again (another chunk, a retry).
DROP TABLE pg_temp.shiftwork_stage

-- name: jobs_insert_plain
-- Jobs without unique keys, and their wake-up, in one statement: one round trip.
WITH input AS (
    SELECT * FROM unnest(
        %(tasks)s::text[], %(queues)s::text[], %(args)s::jsonb[], %(priorities)s::smallint[],
        %(max_attempts)s::int[], %(run_ats)s::timestamptz[], %(timeouts)s::float8[],
        %(metas)s::jsonb[]
    ) WITH ORDINALITY AS t(task, queue, args, priority, max_attempts, run_at, timeout, meta, ord)
), inserted AS (
    INSERT INTO {schema}.jobs (queue, task, args, state, priority, max_attempts, run_at,
                               created_at, timeout, meta)
    SELECT queue, task, args,
           CASE WHEN run_at IS NULL OR run_at <= {now} THEN 'available' ELSE 'scheduled' END,
           priority, max_attempts, coalesce(run_at, {now}), {now}, timeout, meta
    FROM input ORDER BY ord
    RETURNING id
)
SELECT (SELECT array_agg(id ORDER BY id) FROM inserted),
       (SELECT count(pg_notify(%(channel)s, q)) FROM unnest(%(notify)s::text[]) AS q)

-- name: jobs_insert_one
-- One job without a unique key (the common enqueue): scalar parameters, no arrays to
-- build and unnest; the wake-up in the same statement. %(notify)s is NULL for a job
-- that is not due yet.
WITH inserted AS (
    INSERT INTO {schema}.jobs (queue, task, args, state, priority, max_attempts, run_at,
                               created_at, timeout, meta)
    VALUES (%(queue)s, %(task)s, %(args)s::jsonb,
            CASE WHEN %(run_at)s::timestamptz IS NULL OR %(run_at)s::timestamptz <= {now}
                 THEN 'available' ELSE 'scheduled' END,
            %(priority)s, %(max_attempts)s, coalesce(%(run_at)s::timestamptz, {now}), {now},
            %(timeout)s::float8, %(meta)s::jsonb)
    RETURNING id
)
SELECT id, CASE WHEN %(notify)s::text IS NOT NULL THEN pg_notify(%(channel)s, %(notify)s::text) END
FROM inserted

-- name: jobs_reserve_ids
-- Ids for a COPY, in order, and the instant the rows are created at. The sequence is
-- looked up once: in the select list, pg_get_serial_sequence ran per id (0.36 s of
-- catalog lookups for 100,000 ids, against 0.04 s for the nextvals themselves).
WITH s AS MATERIALIZED (
    SELECT pg_get_serial_sequence('{schema}.jobs', 'id')::regclass AS seq
)
SELECT {now}, array(SELECT nextval(s.seq) FROM s, generate_series(1, %(n)s))

-- name: jobs_copy
COPY {schema}.jobs (id, queue, task, args, state, priority, max_attempts, run_at, created_at,
                    timeout, meta) FROM STDIN (FORMAT BINARY)

-- name: jobs_copy_marked
-- The jobs of a graph or a group (store/deps.py): written whole, marks included.
COPY {schema}.jobs (id, queue, task, args, state, priority, max_attempts, run_at, created_at,
                    timeout, meta, deps_pending, watched, group_id, group_mark)
FROM STDIN (FORMAT BINARY)

-- name: jobs_find_active_by_keys
SELECT id, unique_key FROM {schema}.jobs
WHERE unique_key = ANY(%(keys)s::text[])
  AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')

-- name: jobs_notify
SELECT pg_notify(%(channel)s, q) FROM unnest(%(queues)s::text[]) AS q

-- name: jobs_claim
-- The plain claim (ClaimKind.PLAIN): no limit but the worker's slots. Its statement is the
-- function claim_jobs (migrations/functions.sql), which runs it under its generic plan,
-- planned once per connection (the claim is the hottest statement there is).
SELECT * FROM {schema}.claim_jobs(%(queue)s, %(limit)s, %(worker)s, %(lease)s, %(now)s)

-- name: jobs_claim_filtered
-- A step of the claims made in Python (store/flow_claim.py): one task with room, or every
-- task but the limited ones. Never prepared (see jobs_claim): planned for the values each
-- time.
WITH next AS (
    SELECT id FROM {schema}.jobs
    WHERE queue = %(queue)s
      AND state IN ('available', 'scheduled', 'retrying')
      AND run_at <= {now}
      AND (%(only_task)s::text IS NULL OR task = %(only_task)s::text)
      AND NOT (task = ANY(%(exclude)s::text[]))
      AND NOT EXISTS (SELECT 1 FROM {schema}.queue_settings s
                      WHERE s.queue = %(queue)s AND s.paused)
    ORDER BY priority DESC, run_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE {schema}.jobs j
SET state = 'running', attempt = j.attempt + 1, worker_id = %(worker)s,
    attempted_at = {now}, lease_expires_at = {now} + make_interval(secs => %(lease)s)
FROM next
WHERE j.id = next.id
RETURNING j.id, j.task, j.queue, j.args::text, j.attempt, j.max_attempts, j.timeout,
          j.checkpoint::text, j.meta::text, j.priority, j.run_at, j.uncounted

-- name: jobs_count_running_task
SELECT count(*) FROM {schema}.jobs WHERE state = 'running' AND task = %(task)s

-- name: jobs_lock_task_limit
SELECT pg_advisory_xact_lock(hashtextextended('shiftwork.limit.' || %(task)s, 0))

-- name: jobs_complete_many
-- A group member's finish is counted into its group here, in the statement that
-- finishes it (so exactly once, and without a statement more); the groups it may have
-- made due come back as rows of their own for store/deps.py to settle.
WITH done AS (
    UPDATE {schema}.jobs j
    -- a hold asked while it ran (app.hold): an attempt that would run again is held
    SET state = CASE WHEN j.hold_requested AND u.state IN ('retrying', 'scheduled', 'available')
                     THEN 'held' ELSE u.state END,
        hold_requested = false,
        finished_at = CASE WHEN u.state IN ('succeeded', 'dead', 'cancelled') THEN {now} END,
        -- a snooze (back to scheduled) runs at once if a wake-up came while it ran
        run_at = CASE WHEN u.state = 'scheduled' AND j.wake_requested THEN {now}
                      ELSE coalesce(u.run_at, j.run_at) END,
        wake_requested = false,
        errors = CASE WHEN u.error IS NULL THEN j.errors
                      ELSE j.errors || jsonb_build_array(u.error) END,
        result = u.result,
        peak_rss = u.peak_rss,  -- a limited attempt's peak resident size (migration 0019)
        items = u.items,  -- what this attempt reported (ctx.processed); NULL: it did not say
        lease_expires_at = NULL,
        -- a snoozed run (back to scheduled) is not counted as an attempt
        uncounted = j.uncounted + CASE WHEN u.state = 'scheduled' THEN 1 ELSE 0 END,
        -- 1 -> 2: counted by this statement (see migration 0014); 2 -> 3: an earlier one
        group_mark = CASE WHEN j.group_mark = 1 AND u.state IN ('succeeded', 'dead', 'cancelled')
                          THEN 2 WHEN j.group_mark = 2 THEN 3 ELSE j.group_mark END
    FROM unnest(%(ids)s::bigint[], %(attempts)s::int[], %(states)s::text[],
                %(run_ats)s::timestamptz[], %(errors)s::jsonb[], %(results)s::jsonb[],
                %(peaks)s::bigint[], %(items)s::bigint[])
         AS u(id, attempt, state, run_at, error, result, peak_rss, items)
    -- By primary key: `state || ''` keeps the state test out of index choice. Written
    -- plainly, once statistics say few jobs run (any ANALYZE after a bulk load), the
    -- planner walks a partial index on running jobs, full of dead entries while a queue
    -- drains, instead of the ids (a drain ran ~16x slower; tests/test_claim_plans.py).
    WHERE j.id = u.id AND j.attempt = u.attempt AND j.state || '' = 'running'
    -- watched: a dependent or a waiter cares; its completion is resolved and announced
    -- by deps_resolve right after (store/postgres/store.py). Plain jobs pay nothing for it.
    RETURNING j.id, j.watched AND j.state IN ('succeeded', 'dead', 'cancelled') AS watched,
              j.group_id, j.group_mark, j.state, j.queue,
              -- a snooze already due: a wake-up (an event, an update) came while it ran
              j.state = 'scheduled' AND j.run_at <= {now} AS due_now
), woken AS (
    -- its queue hears of it now, not at its workers' next poll
    SELECT count(pg_notify(%(channel)s, q)) AS n
    FROM (SELECT DISTINCT queue FROM done WHERE due_now) s(q)
), counted AS (
    UPDATE {schema}.job_groups g
    SET pending = g.pending - m.n, failed = g.failed + m.bad
    FROM (SELECT group_id, count(*)::int AS n,
                 count(*) FILTER (WHERE state <> 'succeeded')::int AS bad
          FROM done WHERE group_mark = 2 GROUP BY group_id) m
    WHERE g.id = m.group_id
    RETURNING g.id, g.callback_id IS NOT NULL
                    AND (g.pending <= 0 OR (g.failed > 0 AND g.on_failure = 'cancel')) AS due
)
SELECT id, watched, NULL::bigint FROM done
UNION ALL
SELECT NULL, NULL, id FROM counted WHERE due
UNION ALL
-- referenced so that it runs; never a row
SELECT NULL, NULL, NULL FROM woken WHERE woken.n < 0

-- name: jobs_heartbeat
-- Only the (id, attempt) pairs the worker holds: a job claimed by a call whose reply
-- was lost is not among them, so its lease runs out and the rescuer brings it back.
-- A row of NULLs says the worker's own row is gone (pruned during an outage): the store
-- registers it again (store/fleet.py, _worker_back).
WITH w AS (
    UPDATE {schema}.workers SET heartbeat_at = {now} WHERE id = %(worker)s RETURNING id
), renewed AS (
    UPDATE {schema}.jobs j
    SET lease_expires_at = {now} + make_interval(secs => %(lease)s)
    FROM unnest(%(ids)s::bigint[], %(attempts)s::int[]) AS h(id, attempt)
    -- by primary key, as jobs_complete_many (`state || ''`: no partial index matches)
    WHERE j.id = h.id AND j.attempt = h.attempt AND j.worker_id = %(worker)s
      AND j.state || '' = 'running'
    RETURNING j.id, j.attempt, j.cancel_requested
)
SELECT id, attempt, cancel_requested FROM renewed
UNION ALL
SELECT NULL, NULL, NULL WHERE NOT EXISTS (SELECT FROM w)

-- name: jobs_release_unknown
-- After a claim whose reply was lost: the jobs it took never reached the worker, so
-- they go back at once, their attempt not counted (they never began).
UPDATE {schema}.jobs j
-- (a hold asked while it ran holds it: app.hold)
SET state = CASE WHEN j.hold_requested THEN 'held' ELSE 'available' END, hold_requested = false,
    lease_expires_at = NULL, uncounted = j.uncounted + 1,
    run_at = {now},
    errors = j.errors || jsonb_build_array(jsonb_build_object(
        'attempt', j.attempt, 'kind', 'released', 'type', 'ReplyLost',
        'message', 'claimed by a call whose reply was lost; given back, attempt not counted',
        'at', {now}))
WHERE j.worker_id = %(worker)s AND j.state = 'running' AND j.queue = %(queue)s
  AND NOT EXISTS (SELECT 1 FROM unnest(%(ids)s::bigint[], %(attempts)s::int[]) AS h(id, attempt)
                  WHERE h.id = j.id AND h.attempt = j.attempt)
RETURNING j.id

-- name: jobs_written
-- After a completion whose reply was lost: which outcomes are already in their rows.
-- Written: the row is at that attempt and state, or it moved on to a later attempt
-- without its lease ever having expired or been given back at that attempt.
SELECT j.id FROM {schema}.jobs j
JOIN unnest(%(ids)s::bigint[], %(attempts)s::int[], %(states)s::text[]) AS u(id, attempt, state)
  ON j.id = u.id
WHERE (j.attempt = u.attempt AND j.state = u.state)
   OR (j.attempt = u.attempt AND j.state = 'held'
       AND u.state IN ('retrying', 'scheduled', 'available'))
   OR (j.attempt > u.attempt AND NOT EXISTS (
         SELECT 1 FROM jsonb_array_elements(j.errors) e
         WHERE (e->>'attempt')::int = u.attempt
           AND e->>'kind' IN ('lease_expired', 'handed_back', 'released')))

-- name: jobs_rescue
-- A workflow not yet ended is spared (back, this run not counted) when its lost run never
-- began its body (claimed ahead), or when the run was its last attempt and it had not
-- decided to compensate yet: its next run sees the lost last attempt and compensates
-- (workflow/runner.py). A run lost while compensating on its last attempt ends the
-- workflow failed. See store/sqlite/jobs.sql for the same rule in three statements.
WITH expired AS (
    SELECT id FROM {schema}.jobs
    WHERE state = 'running' AND lease_expires_at < {now}
    ORDER BY lease_expires_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
flows AS (
    SELECT r.job_id, j.attempt,
           (r.began_attempt IS DISTINCT FROM j.attempt
            OR (r.status = 'running' AND j.attempt - j.uncounted >= j.max_attempts)) AS spared,
           (r.began_attempt = j.attempt AND r.status = 'compensating'
            AND j.attempt - j.uncounted >= j.max_attempts) AS ends
    FROM expired e JOIN {schema}.jobs j ON j.id = e.id
         JOIN {schema}.workflow_runs r ON r.job_id = e.id
    WHERE r.status IN ('running', 'compensating')
),
marked AS (
    UPDATE {schema}.workflow_runs r
    SET last_attempt = CASE WHEN f.spared AND r.began_attempt = f.attempt THEN f.attempt
                            ELSE r.last_attempt END,
        status = CASE WHEN f.ends THEN 'failed' ELSE r.status END,
        cause = CASE WHEN f.ends THEN coalesce(r.cause || '; ', '')
                     || 'its worker died on the last attempt while compensating'
                     ELSE r.cause END,
        updated_at = {now}
    FROM flows f
    WHERE r.job_id = f.job_id AND (f.spared OR f.ends)
)
UPDATE {schema}.jobs j
SET state = CASE WHEN coalesce(f.spared, false) THEN (CASE WHEN j.hold_requested THEN 'held' ELSE 'available' END)
                 WHEN j.attempt - j.uncounted >= j.max_attempts THEN 'dead'
                 ELSE (CASE WHEN j.hold_requested THEN 'held' ELSE 'available' END) END,
    hold_requested = false,
    finished_at = CASE WHEN NOT coalesce(f.spared, false)
                        AND j.attempt - j.uncounted >= j.max_attempts THEN {now} END,
    uncounted = j.uncounted + CASE WHEN coalesce(f.spared, false) THEN 1 ELSE 0 END,
    lease_expires_at = NULL,
    errors = j.errors || jsonb_build_array(jsonb_build_object(
        'attempt', j.attempt, 'kind', 'lease_expired', 'type', 'LeaseExpired',
        'message', 'worker ' || coalesce(j.worker_id, '?') || ' stopped renewing its lease',
        'at', {now}))
FROM expired LEFT JOIN flows f ON f.job_id = expired.id
WHERE j.id = expired.id
RETURNING j.id, j.state, j.task, j.queue, j.attempt

-- name: jobs_hand_back
-- Running jobs given back unrun, at once, their attempt not counted: at shutdown, or by a
-- worker that does not register the job's task (a rolling deploy). A hand-back for the
-- same reason as the last error record replaces it and counts the times, so a job passed
-- over by many old workers keeps one record.
UPDATE {schema}.jobs j
-- (a hold asked while it ran holds it: app.hold)
SET state = CASE WHEN j.hold_requested THEN 'held' ELSE 'available' END, hold_requested = false,
    lease_expires_at = NULL, uncounted = j.uncounted + 1,
    run_at = {now},
    errors = CASE WHEN j.errors -> -1 ->> 'kind' = %(kind)s
                  THEN (j.errors - (-1)) || jsonb_build_array(e.rec || jsonb_build_object(
                      'attempt', j.attempt,
                      'times', coalesce((j.errors -> -1 ->> 'times')::int, 1) + 1))
                  ELSE j.errors || jsonb_build_array(e.rec || jsonb_build_object(
                      'attempt', j.attempt)) END
FROM unnest(%(ids)s::bigint[], %(attempts)s::int[]) AS u(id, attempt),
     (SELECT jsonb_build_object('kind', %(kind)s::text, 'type', %(type)s::text,
                                        'message', %(message)s::text, 'at', {now})) AS e(rec)
-- by primary key, as jobs_complete_many (`state || ''`: no partial index matches)
WHERE j.id = u.id AND j.attempt = u.attempt AND j.state || '' = 'running'
  AND j.worker_id = %(worker)s

-- name: jobs_get
SELECT * FROM {schema}.jobs WHERE id = %(id)s

-- name: jobs_list
-- Newest first, each filter optional (NULL: any).
SELECT * FROM {schema}.jobs
WHERE (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(task)s::text IS NULL OR task = %(task)s::text)
  AND (%(before)s::bigint IS NULL OR id < %(before)s::bigint)
ORDER BY id DESC
LIMIT %(limit)s

-- name: jobs_retry
UPDATE {schema}.jobs
SET state = 'available', run_at = {now}, finished_at = NULL,
    max_attempts = greatest(max_attempts, attempt - uncounted + 1), cancel_requested = false
WHERE id = %(id)s AND state IN ('dead', 'cancelled', 'retrying', 'scheduled')
RETURNING id

-- name: jobs_cancel_waiting
UPDATE {schema}.jobs
SET state = 'cancelled', finished_at = {now}, hold_requested = false
WHERE id = %(id)s AND state IN ('scheduled', 'available', 'retrying', 'held')
RETURNING id

-- name: jobs_cancel_running
UPDATE {schema}.jobs SET cancel_requested = true
WHERE id = %(id)s AND state = 'running'
RETURNING id

-- name: jobs_prune
-- {hot}: the jobs table, or with partitioned history its DEFAULT partition jobs_hot
-- (the jobs finished before the partitions began): the partitions themselves are
-- dropped whole (partitions.py), never deleted from row by row.
WITH gone AS (
    DELETE FROM {hot} WHERE id IN (
        SELECT id FROM {hot}
        WHERE (state IN ('succeeded', 'cancelled')
               AND finished_at < {now} - make_interval(secs => %(finished)s))
           OR (state = 'dead' AND finished_at < {now} - make_interval(secs => %(dead)s))
        LIMIT %(limit)s
    ) RETURNING id
), forgot AS (SELECT {schema}.jobs_forget(array(SELECT id FROM gone)))
SELECT id FROM gone, forgot

-- name: queues_stats
-- One statement, three arms, each matching a partial index's predicate exactly, so
-- the retained history of finished jobs is never read.
WITH waiting AS (
    SELECT queue,
           count(*) FILTER (WHERE run_at <= {now}) AS available,
           count(*) FILTER (WHERE run_at > {now}) AS scheduled,
           min(run_at) FILTER (WHERE run_at <= {now}) AS oldest
    FROM {schema}.jobs WHERE state IN ('available', 'scheduled', 'retrying')
    GROUP BY queue
), running AS (
    SELECT queue, count(*) AS running FROM {schema}.jobs WHERE state = 'running' GROUP BY queue
), dead AS (
    SELECT queue, count(*) AS dead FROM {schema}.jobs WHERE state = 'dead' GROUP BY queue
), held AS (
    -- held jobs (jobs_held_idx): counted apart, never waiting (no oldest-waiting age)
    SELECT queue, count(*) AS held FROM {schema}.jobs WHERE state = 'held' GROUP BY queue
)
SELECT q.queue, coalesce(w.available, 0), coalesce(w.scheduled, 0), coalesce(r.running, 0),
       coalesce(d.dead, 0), extract(epoch FROM {now} - w.oldest)::float8 AS oldest_waiting_age,
       coalesce(h.held, 0)
FROM (SELECT queue FROM waiting UNION SELECT queue FROM running UNION SELECT queue FROM dead
      UNION SELECT queue FROM held) q
LEFT JOIN waiting w USING (queue)
LEFT JOIN running r USING (queue)
LEFT JOIN dead d USING (queue)
LEFT JOIN held h USING (queue)

-- name: queues_finished_counts
SELECT queue, count(*) FILTER (WHERE state = 'succeeded') AS succeeded,
       count(*) FILTER (WHERE state = 'cancelled') AS cancelled
FROM {schema}.jobs WHERE state IN ('succeeded', 'cancelled') GROUP BY queue

-- name: workers_upsert
INSERT INTO {schema}.workers (id, host, pid, queues, tasks, started_at, heartbeat_at)
VALUES (%(id)s, %(host)s, %(pid)s, %(queues)s, %(tasks)s, {now}, {now})
ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, queues = excluded.queues,
                               tasks = excluded.tasks

-- name: workers_delete
DELETE FROM {schema}.workers WHERE id = %(id)s

-- name: workers_list
SELECT id, host, pid, queues, started_at, heartbeat_at, tasks FROM {schema}.workers
ORDER BY started_at

-- name: workers_prune
DELETE FROM {schema}.workers WHERE heartbeat_at < {now} - make_interval(secs => %(stale)s)

-- name: leader_acquire
INSERT INTO {schema}.leaders AS l (name, owner, term, expires_at)
VALUES (%(name)s, %(owner)s, 1, {now} + make_interval(secs => %(ttl)s))
ON CONFLICT (name) DO UPDATE
SET owner = excluded.owner,
    term = CASE WHEN l.owner = excluded.owner THEN l.term ELSE l.term + 1 END,
    expires_at = excluded.expires_at
WHERE l.owner = excluded.owner OR l.expires_at < {now}
RETURNING term

-- name: leader_release
UPDATE {schema}.leaders SET expires_at = {now} - interval '1 second'
WHERE name = %(name)s AND owner = %(owner)s

-- name: db_now
SELECT {now}

-- name: jobs_insert_dedup
-- Jobs whose key the unique_keys table holds (unique_for, unique_states, debounce): the
-- function insert_dedup (functions.sql) settles each key, in order, in one round trip.
SELECT out_id, out_created FROM {schema}.insert_dedup(
    %(tasks)s::text[], %(queues)s::text[], %(args)s::jsonb[], %(priorities)s::smallint[],
    %(max_attempts)s::int[], %(run_ats)s::timestamptz[], %(timeouts)s::float8[],
    %(metas)s::jsonb[], %(keys)s::text[], %(hold_for)s::float8[], %(states)s::text[],
    %(debounce)s::float8[], {now}, %(channel)s)

-- name: unique_keys_prune
-- Rows of unique_keys that can no longer hold their key: expired, or held while a job is
-- in some states and that job is finished or gone. The DELETE names the job each was
-- found with: a row an enqueue has just pointed at a new job (or extended) is kept.
DELETE FROM {schema}.unique_keys u USING (
    SELECT * FROM (
        (SELECT key, job_id FROM {schema}.unique_keys
         WHERE expires_at IS NOT NULL AND expires_at < {now} LIMIT %(limit)s)
        UNION ALL
        (SELECT k.key, k.job_id FROM {schema}.unique_keys k
         WHERE k.expires_at IS NULL AND NOT EXISTS (
             SELECT 1 FROM {schema}.jobs j WHERE j.id = k.job_id
               AND j.state IN ('scheduled', 'available', 'running', 'retrying', 'held'))
         LIMIT %(limit)s)
    ) both_arms LIMIT %(limit)s
) c
WHERE u.key = c.key AND u.job_id = c.job_id
  AND (u.expires_at IS NULL OR u.expires_at < {now})
RETURNING u.key
