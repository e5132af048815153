-- Named queries of the operations console: the filtered jobs list, its bounded count,
-- bulk actions by filter in batches, and their audit. `{filter}` is the
-- filter's own conditions, joined by store/console.py.

-- One fragment per filter field; store/console.py joins those a filter uses with AND
-- (`{states}`: the states as quoted literals, from the JobState enum), so each query
-- names only its conditions and the planner sees plain predicates (a partial index's
-- `state = 'dead'` among them).

-- name: jobs_filter_states
state IN ({states})
-- name: jobs_filter_queue
queue = %(queue)s::text
-- name: jobs_filter_task
task ILIKE %(task)s::text ESCAPE '\'
-- name: jobs_filter_error
((errors -> -1 ->> 'type') || ': ' || (errors -> -1 ->> 'message')) ILIKE %(error)s::text
ESCAPE '\'
-- name: jobs_filter_created_from
created_at >= %(created_from)s::timestamptz
-- name: jobs_filter_created_to
created_at < %(created_to)s::timestamptz
-- name: jobs_filter_finished_from
finished_at >= %(finished_from)s::timestamptz
-- name: jobs_filter_finished_to
finished_at < %(finished_to)s::timestamptz
-- name: jobs_filter_unique_key
-- a key the unique_keys table holds (unique_for, unique_states, debounce): its holder
(unique_key = %(unique_key)s::text OR id IN (
    SELECT job_id FROM {schema}.unique_keys WHERE key = %(unique_key)s::text))
-- name: jobs_filter_id
id = %(id)s::bigint
-- name: jobs_filter_tag
-- `meta ? 'tags'`: the predicate of jobs_tags_idx (only tagged jobs are indexed)
meta ? 'tags' AND meta -> 'tags' ? %(tag)s::text

-- Keyset: the rows after job `after` (the last one shown) in each order.
-- name: jobs_after_created
id < %(after)s::bigint
-- name: jobs_after_run_at
(run_at, id) < (SELECT a.run_at, a.id FROM {schema}.jobs a WHERE a.id = %(after)s::bigint)
-- name: jobs_after_finished
(finished_at, id) < (SELECT a.finished_at, a.id FROM {schema}.jobs a
                     WHERE a.id = %(after)s::bigint)
-- name: jobs_after_ids
id > %(after)s::bigint

-- name: jobs_page_created
SELECT * FROM {schema}.jobs WHERE {filter} ORDER BY id DESC LIMIT %(limit)s

-- name: jobs_page_run_at
SELECT * FROM {schema}.jobs WHERE {filter} ORDER BY run_at DESC, id DESC LIMIT %(limit)s

-- name: jobs_page_finished
-- Only finished jobs have a finish time to sort by.
SELECT * FROM {schema}.jobs WHERE {filter} AND finished_at IS NOT NULL
ORDER BY finished_at DESC, id DESC LIMIT %(limit)s

-- name: jobs_count_upto
-- Counted exactly up to `cap` rows, no further: a total costs at most that many rows.
SELECT count(*) FROM (SELECT 1 FROM {schema}.jobs WHERE {filter} LIMIT %(cap)s) AS m

-- name: jobs_match_ids
-- One batch of a bulk action: the next ids matching, in id order after `after`.
SELECT id FROM {schema}.jobs WHERE {filter} ORDER BY id LIMIT %(limit)s

-- name: jobs_retry_batch
-- jobs_retry for a batch of ids: the same states, the same changes.
UPDATE {schema}.jobs
SET state = 'available', run_at = {now}, finished_at = NULL,
    max_attempts = greatest(max_attempts, attempt - uncounted + 1), cancel_requested = false
WHERE id = ANY(%(ids)s::bigint[]) AND state IN ('dead', 'cancelled', 'retrying', 'scheduled')
RETURNING id

-- name: jobs_cancel_batch_workflows
-- workflow_cancel for a batch: a started workflow is woken to cancel itself (a held one
-- released to do so).
UPDATE {schema}.jobs j
SET state = CASE WHEN j.state = 'held' THEN 'available' ELSE j.state END,
    hold_requested = false, cancel_requested = true, wake_requested = true,
    run_at = CASE WHEN j.state IN ('scheduled', 'retrying', 'held') THEN least(j.run_at, {now})
                  ELSE j.run_at END
WHERE j.id = ANY(%(ids)s::bigint[])
  AND j.state IN ('scheduled', 'available', 'running', 'retrying', 'held')
  AND EXISTS (SELECT 1 FROM {schema}.workflow_runs r
              WHERE r.job_id = j.id AND r.status IN ('running', 'compensating'))
RETURNING j.id

-- name: jobs_cancel_batch_waiting
-- jobs_cancel_waiting for a batch, but not the started workflows (woken above instead).
UPDATE {schema}.jobs j
SET state = 'cancelled', finished_at = {now}, hold_requested = false
WHERE j.id = ANY(%(ids)s::bigint[]) AND j.state IN ('scheduled', 'available', 'retrying', 'held')
  AND NOT EXISTS (SELECT 1 FROM {schema}.workflow_runs r
                  WHERE r.job_id = j.id AND r.status IN ('running', 'compensating'))
RETURNING j.id, j.meta

-- name: jobs_cancel_batch_running
-- jobs_cancel_running for a batch: asked to stop, seen at the job's next check.
UPDATE {schema}.jobs SET cancel_requested = true
WHERE id = ANY(%(ids)s::bigint[]) AND state = 'running'
RETURNING id

-- name: jobs_delete_finished
-- As the pruner deletes: finished jobs only (deleting live work is cancelling it).
WITH gone AS (
    DELETE FROM {schema}.jobs
    WHERE id = ANY(%(ids)s::bigint[]) AND state IN ('succeeded', 'dead', 'cancelled')
    RETURNING id
), forgot AS (SELECT {schema}.jobs_forget(array(SELECT id FROM gone)))
SELECT id FROM gone, forgot

-- name: bulk_actions_add
INSERT INTO {schema}.bulk_actions (at, who, action, filter, matched, done)
VALUES ({now}, %(who)s, %(action)s, %(filter)s, %(matched)s, %(done)s)

-- name: bulk_actions_list
SELECT at, who, action, filter, matched, done FROM {schema}.bulk_actions
ORDER BY id DESC LIMIT %(limit)s

-- name: bulk_actions_prune
DELETE FROM {schema}.bulk_actions
WHERE id <= (SELECT id FROM {schema}.bulk_actions ORDER BY id DESC OFFSET %(keep)s LIMIT 1)
