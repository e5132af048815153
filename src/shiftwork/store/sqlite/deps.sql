-- Composition: dependencies, groups, waiting on results (store/deps.py decides; these
-- are its statements, run inside one write transaction). Lists arrive as JSON arrays.

-- name: deps_watch
UPDATE jobs SET watched = 1
WHERE id IN (SELECT value FROM json_each(:ids))
RETURNING id, state

-- name: deps_link
INSERT INTO job_deps (job_id, parent_id, on_failure)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]')
FROM json_each(:edges)

-- name: deps_mark
-- Jobs just inserted: how many jobs each waits for, whether it is itself a parent, and
-- the group it is a member of.
UPDATE jobs SET deps_pending = p.n, watched = watched OR p.w, group_id = p.g,
                group_mark = CASE WHEN p.g IS NULL THEN 0 ELSE 1 END
FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS n,
             json_extract(value, '$[2]') AS w, json_extract(value, '$[3]') AS g
      FROM json_each(:marks)) AS p
WHERE jobs.id = p.id

-- name: deps_take_edges
-- The parents named have finished: take their open edges, once each.
UPDATE job_deps SET resolved = 1
WHERE parent_id IN (SELECT value FROM json_each(:ids)) AND resolved = 0
  AND (SELECT state FROM jobs p WHERE p.id = job_deps.parent_id)
      IN ('succeeded', 'dead', 'cancelled')
RETURNING job_id, parent_id,
          on_failure = 'cancel' AND (SELECT state FROM jobs p WHERE p.id = job_deps.parent_id)
                                    <> 'succeeded'

-- name: deps_count_down
-- One dependent: n of its parents finished; bad: the id of a failed parent it must not
-- run after (NULL: none).
UPDATE jobs
SET deps_pending = deps_pending - :n,
    state = CASE WHEN :bad IS NOT NULL THEN 'cancelled'
                 WHEN deps_pending - :n <= 0 THEN 'available' ELSE state END,
    run_at = CASE WHEN :bad IS NULL AND deps_pending - :n <= 0 THEN :now ELSE run_at END,
    finished_at = CASE WHEN :bad IS NOT NULL THEN :now END,
    errors = CASE WHEN :bad IS NULL THEN errors ELSE json_insert(errors, '$[#]', json_object(
        'attempt', attempt, 'kind', 'dependency', 'type', 'DependencyFailed', 'at', :now_iso,
        'message', 'job ' || :bad || ' it runs after did not succeed')) END
WHERE id = :id AND state = 'scheduled' AND deps_pending > 0
RETURNING id, state, watched

-- name: deps_sweep
-- Watched jobs finished in the last hour with edges still open (a crash between a
-- completion and its resolution, a rescue to dead, a cancel by a schedule's deadline).
SELECT DISTINCT d.parent_id FROM jobs p
JOIN job_deps d ON d.parent_id = p.id
WHERE p.state IN ('succeeded', 'dead', 'cancelled') AND p.finished_at > :now - 3600
  AND p.watched AND d.resolved = 0
LIMIT :limit

-- name: jobs_finished
SELECT id, state, result, json_extract(errors, '$[#-1]') FROM jobs
WHERE id IN (SELECT value FROM json_each(:ids)) AND state IN ('succeeded', 'dead', 'cancelled')

-- name: deps_parents
SELECT d.parent_id, j.task, j.state, d.on_failure, d.resolved
FROM job_deps d LEFT JOIN jobs j ON j.id = d.parent_id
WHERE d.job_id = :id ORDER BY d.parent_id

-- name: deps_children
SELECT d.job_id, j.task, j.state, d.on_failure, d.resolved
FROM job_deps d LEFT JOIN jobs j ON j.id = d.job_id
WHERE d.parent_id = :id ORDER BY d.job_id

-- name: deps_input
SELECT p.result FROM job_deps d JOIN jobs p ON p.id = d.parent_id WHERE d.job_id = :id

-- name: groups_insert
INSERT INTO job_groups (total, pending, created_at) VALUES (:total, :total, :now) RETURNING id

-- name: groups_set_callback
-- The group's callback, set once; whether it is due at once.
UPDATE job_groups SET callback_id = :callback, on_failure = :on_failure
WHERE id = :group AND callback_id IS NULL
RETURNING id, pending <= 0 OR (failed > 0 AND on_failure = 'cancel')

-- name: groups_members_count
-- Finished members not yet counted: marked counted (1 -> 3), each once.
UPDATE jobs SET group_mark = 3
WHERE id IN (SELECT value FROM json_each(:ids)) AND group_mark = 1
  AND state IN ('succeeded', 'dead', 'cancelled')
RETURNING group_id, state

-- name: groups_count_down
-- One group: n of its members finished, bad of them without success; whether its
-- callback may be due.
UPDATE job_groups SET pending = pending - :n, failed = failed + :bad
WHERE id = :group
RETURNING id, callback_id IS NOT NULL AND (pending <= 0 OR (failed > 0 AND on_failure = 'cancel'))

-- name: groups_settle
-- Due groups, marked settled once; their callbacks to move, and whether to cancel them.
UPDATE job_groups SET settled_at = :now
WHERE id IN (SELECT value FROM json_each(:ids)) AND settled_at IS NULL
  AND callback_id IS NOT NULL AND (pending <= 0 OR (failed > 0 AND on_failure = 'cancel'))
RETURNING id, callback_id, failed > 0 AND on_failure = 'cancel'

-- name: groups_release
-- One callback: available, or (:cancel) cancelled as a member of group :group failed.
UPDATE jobs
SET deps_pending = 0,
    state = CASE WHEN :cancel THEN 'cancelled' ELSE 'available' END,
    run_at = CASE WHEN :cancel THEN run_at ELSE :now END,
    finished_at = CASE WHEN :cancel THEN :now END,
    errors = CASE WHEN NOT :cancel THEN errors ELSE json_insert(errors, '$[#]', json_object(
        'attempt', attempt, 'kind', 'dependency', 'type', 'DependencyFailed', 'at', :now_iso,
        'message', 'a member of group ' || :group || ' did not succeed')) END
WHERE id = :id AND state = 'scheduled' AND deps_pending > 0
RETURNING id, state, watched

-- name: groups_sweep
-- Members finished and not counted (jobs_group_uncounted_idx); groups due and not
-- settled (job_groups_open_idx).
SELECT 'member', id FROM (
    SELECT id FROM jobs
    WHERE group_mark = 1 AND state IN ('succeeded', 'dead', 'cancelled')
    LIMIT :limit)
UNION ALL
SELECT 'group', id FROM (
    SELECT id FROM job_groups
    WHERE settled_at IS NULL AND callback_id IS NOT NULL
      AND (pending <= 0 OR (failed > 0 AND on_failure = 'cancel'))
    LIMIT :limit)

-- name: groups_prune
-- Groups past retention whose members and callback are all gone (pruned as jobs are).
DELETE FROM job_groups WHERE id IN (
    SELECT g.id FROM job_groups g
    WHERE g.created_at < :now - :older
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.group_id = g.id)
      AND (g.callback_id IS NULL
           OR NOT EXISTS (SELECT 1 FROM jobs c WHERE c.id = g.callback_id))
    LIMIT :limit)
RETURNING id

-- name: groups_get
SELECT id, total, callback_id, created_at FROM job_groups WHERE id = :group

-- name: groups_counts
SELECT state, count(*) FROM jobs WHERE group_id = :group GROUP BY state

-- name: groups_member_ids
SELECT id FROM jobs WHERE group_id = :group ORDER BY id

-- name: groups_of_callback
SELECT id FROM job_groups WHERE callback_id = :id

-- name: groups_of_member
SELECT group_id FROM jobs WHERE id = :id AND group_id IS NOT NULL

-- name: groups_results
SELECT id, state, result FROM jobs WHERE group_id = :group ORDER BY id
