-- Named queries of the operations console (see the PostgreSQL file). Times are Unix
-- seconds; LIKE is case-insensitive for ASCII letters.

-- One fragment per filter field, joined by store/console.py (see the PostgreSQL file).

-- name: jobs_filter_states
state IN ({states})
-- name: jobs_filter_queue
queue = :queue
-- name: jobs_filter_task
task LIKE :task ESCAPE '\'
-- name: jobs_filter_error
(json_extract(errors, '$[#-1].type') || ': ' || json_extract(errors, '$[#-1].message'))
LIKE :error ESCAPE '\'
-- name: jobs_filter_created_from
created_at >= :created_from
-- name: jobs_filter_created_to
created_at < :created_to
-- name: jobs_filter_finished_from
finished_at >= :finished_from
-- name: jobs_filter_finished_to
finished_at < :finished_to
-- name: jobs_filter_unique_key
unique_key = :unique_key
-- name: jobs_filter_id
id = :id
-- name: jobs_filter_tag
EXISTS (SELECT 1 FROM json_each(meta, '$.tags') WHERE value = :tag)

-- name: jobs_after_created
id < :after
-- name: jobs_after_run_at
(run_at, id) < (SELECT a.run_at, a.id FROM jobs a WHERE a.id = :after)
-- name: jobs_after_finished
(finished_at, id) < (SELECT a.finished_at, a.id FROM jobs a WHERE a.id = :after)
-- name: jobs_after_ids
id > :after

-- name: jobs_page_created
SELECT * FROM jobs WHERE {filter} ORDER BY id DESC LIMIT :limit

-- name: jobs_page_run_at
SELECT * FROM jobs WHERE {filter} ORDER BY run_at DESC, id DESC LIMIT :limit

-- name: jobs_page_finished
SELECT * FROM jobs WHERE {filter} AND finished_at IS NOT NULL
ORDER BY finished_at DESC, id DESC LIMIT :limit

-- name: jobs_count_upto
SELECT count(*) FROM (SELECT 1 FROM jobs WHERE {filter} LIMIT :cap)

-- name: jobs_match_ids
SELECT id FROM jobs WHERE {filter} ORDER BY id LIMIT :limit

-- name: jobs_retry_batch
UPDATE jobs
SET state = 'available', run_at = :now, finished_at = NULL,
    max_attempts = max(max_attempts, attempt - uncounted + 1), cancel_requested = 0
WHERE id IN (SELECT value FROM json_each(:ids))
  AND state IN ('dead', 'cancelled', 'retrying', 'scheduled')
RETURNING id

-- name: jobs_cancel_batch_workflows
-- workflow_cancel for a batch: a started workflow is woken to cancel itself.
UPDATE jobs
SET cancel_requested = 1, wake_requested = 1,
    run_at = CASE WHEN state IN ('scheduled', 'retrying') THEN min(run_at, :now) ELSE run_at END
WHERE id IN (SELECT value FROM json_each(:ids))
  AND state IN ('scheduled', 'available', 'running', 'retrying')
  AND EXISTS (SELECT 1 FROM workflow_runs r
              WHERE r.job_id = jobs.id AND r.status IN ('running', 'compensating'))
RETURNING id

-- name: jobs_cancel_batch_waiting
-- jobs_cancel_waiting for a batch, but not the started workflows (woken above instead).
UPDATE jobs SET state = 'cancelled', finished_at = :now
WHERE id IN (SELECT value FROM json_each(:ids)) AND state IN ('scheduled', 'available', 'retrying')
  AND NOT EXISTS (SELECT 1 FROM workflow_runs r
                  WHERE r.job_id = jobs.id AND r.status IN ('running', 'compensating'))
RETURNING id, meta

-- name: jobs_cancel_batch_running
-- jobs_cancel_running for a batch: asked to stop, seen at the job's next check.
UPDATE jobs SET cancel_requested = 1
WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'running'
RETURNING id

-- name: jobs_delete_finished
DELETE FROM jobs
WHERE id IN (SELECT value FROM json_each(:ids)) AND state IN ('succeeded', 'dead', 'cancelled')
RETURNING id

-- name: bulk_actions_add
INSERT INTO bulk_actions (at, who, action, filter, matched, done)
VALUES (:now, :who, :action, :filter, :matched, :done)

-- name: bulk_actions_list
SELECT at, who, action, filter, matched, done FROM bulk_actions
ORDER BY id DESC LIMIT :limit

-- name: bulk_actions_prune
DELETE FROM bulk_actions
WHERE id <= (SELECT id FROM bulk_actions ORDER BY id DESC LIMIT 1 OFFSET :keep)
