-- Named queries of the operations console (see the PostgreSQL file). Times are Unix
-- seconds; `:states` is a JSON array; LIKE is case-insensitive for ASCII letters.

-- name: jobs_filter
(:states IS NULL OR state IN (SELECT value FROM json_each(:states)))
  AND (:queue IS NULL OR queue = :queue)
  AND (:task IS NULL OR task LIKE :task ESCAPE '\')
  AND (:error IS NULL OR (json_extract(errors, '$[#-1].type') || ': '
                          || json_extract(errors, '$[#-1].message')) LIKE :error ESCAPE '\')
  AND (:created_from IS NULL OR created_at >= :created_from)
  AND (:created_to IS NULL OR created_at < :created_to)
  AND (:finished_from IS NULL OR finished_at >= :finished_from)
  AND (:finished_to IS NULL OR finished_at < :finished_to)
  AND (:unique_key IS NULL OR unique_key = :unique_key)
  AND (:id IS NULL OR id = :id)
  AND (:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(meta, '$.tags') WHERE value = :tag))

-- name: jobs_page_created
SELECT * FROM jobs WHERE {filter} AND (:after IS NULL OR id < :after)
ORDER BY id DESC LIMIT :limit

-- name: jobs_page_run_at
SELECT * FROM jobs
WHERE {filter} AND (:after IS NULL OR (run_at, id) <
                    (SELECT a.run_at, a.id FROM jobs a WHERE a.id = :after))
ORDER BY run_at DESC, id DESC LIMIT :limit

-- name: jobs_page_finished
SELECT * FROM jobs
WHERE {filter} AND finished_at IS NOT NULL
  AND (:after IS NULL OR (finished_at, id) <
       (SELECT a.finished_at, a.id FROM jobs a WHERE a.id = :after))
ORDER BY finished_at DESC, id DESC LIMIT :limit

-- name: jobs_count_upto
SELECT count(*) FROM (SELECT 1 FROM jobs WHERE {filter} LIMIT :cap)

-- name: jobs_match_ids
SELECT id FROM jobs WHERE {filter} AND (:after IS NULL OR id > :after)
ORDER BY id LIMIT :limit

-- name: jobs_retry_batch
UPDATE jobs
SET state = 'available', run_at = :now, finished_at = NULL,
    max_attempts = max(max_attempts, attempt - uncounted + 1), cancel_requested = 0
WHERE id IN (SELECT value FROM json_each(:ids))
  AND state IN ('dead', 'cancelled', 'retrying', 'scheduled')
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
