-- Composition: dependencies, groups, waiting on results (store/deps.py decides; these
-- are its statements). Every lookup of a job is by its primary key.

-- name: deps_watch
-- Mark jobs as watched (a dependent or a waiter cares when they finish); their states.
-- The row lock orders this against a completion of the same job: either the completion
-- sees watched (and resolves / notifies), or this sees the job already finished.
UPDATE {schema}.jobs SET watched = true
WHERE id = ANY(%(ids)s::bigint[])
RETURNING id, state

-- name: deps_link
INSERT INTO {schema}.job_deps (job_id, parent_id, on_failure)
SELECT * FROM unnest(%(jobs)s::bigint[], %(parents)s::bigint[], %(on_failure)s::text[])

-- name: deps_mark
-- Jobs just inserted (when they could not be written whole, store/deps.py): how many
-- jobs each waits for, whether it is itself a parent, and the group it is a member of.
UPDATE {schema}.jobs j
SET deps_pending = p.n, watched = j.watched OR p.w, group_id = p.g,
    group_mark = CASE WHEN p.g IS NULL THEN 0 ELSE 1 END
FROM unnest(%(ids)s::bigint[], %(counts)s::int[], %(watch)s::bool[], %(groups)s::bigint[])
     AS p(id, n, w, g)
WHERE j.id = p.id

-- name: deps_resolve
-- The parents named have finished: take their edges (once each) and count down their
-- dependents; a dependent whose count reaches zero becomes available, one that must not
-- run after a failed parent is cancelled. The same tail as in jobs_complete_many.
WITH edges AS (
    UPDATE {schema}.job_deps d SET resolved = true
    FROM {schema}.jobs p
    WHERE d.parent_id = ANY(%(ids)s::bigint[]) AND NOT d.resolved AND p.id = d.parent_id
      AND p.state IN ('succeeded', 'dead', 'cancelled')
    RETURNING d.job_id, d.parent_id, (p.state <> 'succeeded' AND d.on_failure = 'cancel') AS bad
), released AS (
    UPDATE {schema}.jobs c
    SET deps_pending = c.deps_pending - h.n,
        state = CASE WHEN h.bad IS NOT NULL THEN 'cancelled'
                     WHEN c.deps_pending - h.n <= 0 THEN 'available' ELSE c.state END,
        run_at = CASE WHEN h.bad IS NULL AND c.deps_pending - h.n <= 0 THEN {now}
                      ELSE c.run_at END,
        finished_at = CASE WHEN h.bad IS NOT NULL THEN {now} END,
        errors = CASE WHEN h.bad IS NULL THEN c.errors ELSE c.errors || jsonb_build_array(
            jsonb_build_object('attempt', c.attempt, 'kind', 'dependency',
                               'type', 'DependencyFailed', 'at', {now},
                               'message', 'job ' || h.bad || ' it runs after did not succeed'))
                 END
    FROM (SELECT job_id, count(*)::int AS n, min(parent_id) FILTER (WHERE bad) AS bad
          FROM edges GROUP BY job_id) h
    WHERE c.id = h.job_id AND c.state = 'scheduled' AND c.deps_pending > 0
    RETURNING c.id, c.state, c.queue, c.watched
), wake_queues AS (
    SELECT count(pg_notify(%(channel)s, q)) AS n
    FROM (SELECT DISTINCT queue FROM released WHERE state = 'available') s(q)
), wake_waiters AS (
    SELECT count(pg_notify(%(done_channel)s, '*')) AS n
    FROM (SELECT 1 FROM released WHERE watched AND state = 'cancelled'
          UNION ALL SELECT 1 WHERE %(finished)s::boolean LIMIT 1) s
)
SELECT r.id, r.state, r.watched FROM released r
UNION ALL
-- referenced so that they run; never a row
SELECT NULL, NULL, NULL FROM wake_queues, wake_waiters WHERE wake_queues.n + wake_waiters.n < 0

-- name: deps_sweep
-- Watched jobs finished in the last hour with edges still open (a crash between a
-- completion and its resolution, a rescue to dead, a cancel by a schedule's deadline).
-- Read through jobs_finished_idx: the history of edges is never scanned.
SELECT DISTINCT d.parent_id FROM {schema}.jobs p
JOIN {schema}.job_deps d ON d.parent_id = p.id
WHERE p.state IN ('succeeded', 'dead', 'cancelled')
  AND p.finished_at > {now} - interval '1 hour' AND p.watched AND NOT d.resolved
LIMIT %(limit)s

-- name: jobs_finished
-- Of the jobs named, those finished: (id, state, result, last error).
SELECT id, state, result::text, (errors -> -1)::text FROM {schema}.jobs
WHERE id = ANY(%(ids)s::bigint[]) AND state IN ('succeeded', 'dead', 'cancelled')

-- name: deps_parents
SELECT d.parent_id, j.task, j.state, d.on_failure, d.resolved
FROM {schema}.job_deps d LEFT JOIN {schema}.jobs j ON j.id = d.parent_id
WHERE d.job_id = %(id)s ORDER BY d.parent_id

-- name: deps_children
SELECT d.job_id, j.task, j.state, d.on_failure, d.resolved
FROM {schema}.job_deps d LEFT JOIN {schema}.jobs j ON j.id = d.job_id
WHERE d.parent_id = %(id)s ORDER BY d.job_id

-- name: deps_input
-- A chain link's input: the result of the one job it runs after.
SELECT p.result::text FROM {schema}.job_deps d JOIN {schema}.jobs p ON p.id = d.parent_id
WHERE d.job_id = %(id)s

-- name: groups_insert
INSERT INTO {schema}.job_groups (total, pending, created_at)
VALUES (%(total)s, %(total)s, {now}) RETURNING id

-- name: groups_set_callback
-- The group's callback, set once; whether it is due at once (the members finished
-- already, or one failed and it must not run then).
UPDATE {schema}.job_groups SET callback_id = %(callback)s, on_failure = %(on_failure)s
WHERE id = %(group)s AND callback_id IS NULL
RETURNING id, pending <= 0 OR (failed > 0 AND on_failure = 'cancel')

-- name: groups_count
-- Members finished outside a completion (a rescue to dead, a cancel; the sweep): each
-- counted once into its group (group_mark 1 -> 3). The groups whose callback may be due.
WITH members AS (
    UPDATE {schema}.jobs SET group_mark = 3
    WHERE id = ANY(%(ids)s::bigint[]) AND group_mark = 1
      AND state IN ('succeeded', 'dead', 'cancelled')
    RETURNING group_id, state
)
UPDATE {schema}.job_groups g
SET pending = g.pending - m.n, failed = g.failed + m.bad
FROM (SELECT group_id, count(*)::int AS n,
             count(*) FILTER (WHERE state <> 'succeeded')::int AS bad
      FROM members GROUP BY group_id) m
WHERE g.id = m.group_id
RETURNING g.id, g.callback_id IS NOT NULL
                AND (g.pending <= 0 OR (g.failed > 0 AND g.on_failure = 'cancel'))

-- name: groups_settle
-- Groups whose members all finished, or one failed under on_failure="cancel": their
-- callback becomes available, or is cancelled. Once: the group is marked settled under
-- its row lock, so two settles of one group (two completions, the sweep) move it once.
WITH g AS (
    UPDATE {schema}.job_groups SET settled_at = {now}
    WHERE id = ANY(%(ids)s::bigint[]) AND settled_at IS NULL AND callback_id IS NOT NULL
      AND (pending <= 0 OR (failed > 0 AND on_failure = 'cancel'))
    RETURNING id, callback_id, failed > 0 AND on_failure = 'cancel' AS cancel
), released AS (
    UPDATE {schema}.jobs c
    SET deps_pending = 0,
        state = CASE WHEN g.cancel THEN 'cancelled' ELSE 'available' END,
        run_at = CASE WHEN g.cancel THEN c.run_at ELSE {now} END,
        finished_at = CASE WHEN g.cancel THEN {now} END,
        errors = CASE WHEN NOT g.cancel THEN c.errors ELSE c.errors || jsonb_build_array(
            jsonb_build_object('attempt', c.attempt, 'kind', 'dependency',
                               'type', 'DependencyFailed', 'at', {now},
                               'message', 'a member of group ' || g.id || ' did not succeed'))
                 END
    FROM g
    WHERE c.id = g.callback_id AND c.state = 'scheduled' AND c.deps_pending > 0
    RETURNING c.id, c.state, c.queue, c.watched
), wake_queues AS (
    SELECT count(pg_notify(%(channel)s, q)) AS n
    FROM (SELECT DISTINCT queue FROM released WHERE state = 'available') s(q)
), wake_waiters AS (
    SELECT count(pg_notify(%(done_channel)s, '*')) AS n
    FROM (SELECT 1 FROM released WHERE watched AND state = 'cancelled' LIMIT 1) s
)
SELECT r.id, r.state, r.watched FROM released r
UNION ALL
-- referenced so that they run; never a row
SELECT NULL, NULL, NULL FROM wake_queues, wake_waiters WHERE wake_queues.n + wake_waiters.n < 0

-- name: groups_sweep
-- Left by a crash between a finish and its count, or a count and its settle: members
-- finished and not counted (through jobs_group_uncounted_idx, which holds only those),
-- and groups due but not settled (through job_groups_open_idx).
SELECT 'member', id FROM (
    SELECT id FROM {schema}.jobs
    WHERE group_mark = 1 AND state IN ('succeeded', 'dead', 'cancelled')
    LIMIT %(limit)s) m
UNION ALL
SELECT 'group', id FROM (
    SELECT id FROM {schema}.job_groups
    WHERE settled_at IS NULL AND callback_id IS NOT NULL
      AND (pending <= 0 OR (failed > 0 AND on_failure = 'cancel'))
    LIMIT %(limit)s) g

-- name: groups_prune
-- Groups past retention whose members and callback are all gone (pruned as jobs are).
DELETE FROM {schema}.job_groups WHERE id IN (
    SELECT g.id FROM {schema}.job_groups g
    WHERE g.created_at < {now} - make_interval(secs => %(older)s)
      AND NOT EXISTS (SELECT 1 FROM {schema}.jobs j WHERE j.group_id = g.id)
      AND (g.callback_id IS NULL
           OR NOT EXISTS (SELECT 1 FROM {schema}.jobs c WHERE c.id = g.callback_id))
    LIMIT %(limit)s)
RETURNING id

-- name: groups_get
SELECT id, total, callback_id, created_at FROM {schema}.job_groups WHERE id = %(group)s

-- name: groups_counts
SELECT state, count(*) FROM {schema}.jobs WHERE group_id = %(group)s GROUP BY state

-- name: groups_member_ids
SELECT id FROM {schema}.jobs WHERE group_id = %(group)s ORDER BY id

-- name: groups_of_callback
SELECT id FROM {schema}.job_groups WHERE callback_id = %(id)s

-- name: groups_of_member
SELECT group_id FROM {schema}.jobs WHERE id = %(id)s AND group_id IS NOT NULL

-- name: groups_results
-- Members in order, with their state and result (members pruned are missing).
SELECT id, state, result::text FROM {schema}.jobs
WHERE group_id = %(group)s ORDER BY id
