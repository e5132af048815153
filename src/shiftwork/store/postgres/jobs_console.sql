-- Named queries of the operations console: the filtered jobs list, its bounded count,
-- bulk actions by filter in batches, and their audit. `{filter}` is the jobs_filter
-- fragment, put in by store/console.py; every filter is optional (NULL: any).

-- name: jobs_filter
(%(states)s::text[] IS NULL OR state = ANY(%(states)s::text[]))
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(task)s::text IS NULL OR task ILIKE %(task)s::text ESCAPE '\')
  AND (%(error)s::text IS NULL OR ((errors -> -1 ->> 'type') || ': '
                                   || (errors -> -1 ->> 'message')) ILIKE %(error)s::text
                                  ESCAPE '\')
  AND (%(created_from)s::timestamptz IS NULL OR created_at >= %(created_from)s::timestamptz)
  AND (%(created_to)s::timestamptz IS NULL OR created_at < %(created_to)s::timestamptz)
  AND (%(finished_from)s::timestamptz IS NULL
       OR finished_at >= %(finished_from)s::timestamptz)
  AND (%(finished_to)s::timestamptz IS NULL OR finished_at < %(finished_to)s::timestamptz)
  AND (%(unique_key)s::text IS NULL OR unique_key = %(unique_key)s::text)
  AND (%(id)s::bigint IS NULL OR id = %(id)s::bigint)
  -- `meta ? 'tags'` first: the predicate of jobs_tags_idx (only tagged jobs are indexed)
  AND (%(tag)s::text IS NULL OR (meta ? 'tags' AND meta -> 'tags' ? %(tag)s::text))

-- name: jobs_page_created
-- Keyset paging: the page after job `after` (the last one shown), newest first.
SELECT * FROM {schema}.jobs
WHERE {filter} AND (%(after)s::bigint IS NULL OR id < %(after)s::bigint)
ORDER BY id DESC LIMIT %(limit)s

-- name: jobs_page_run_at
SELECT * FROM {schema}.jobs
WHERE {filter} AND (%(after)s::bigint IS NULL OR (run_at, id) <
                    (SELECT a.run_at, a.id FROM {schema}.jobs a WHERE a.id = %(after)s::bigint))
ORDER BY run_at DESC, id DESC LIMIT %(limit)s

-- name: jobs_page_finished
-- Only finished jobs have a finish time to sort by.
SELECT * FROM {schema}.jobs
WHERE {filter} AND finished_at IS NOT NULL
  AND (%(after)s::bigint IS NULL OR (finished_at, id) <
       (SELECT a.finished_at, a.id FROM {schema}.jobs a WHERE a.id = %(after)s::bigint))
ORDER BY finished_at DESC, id DESC LIMIT %(limit)s

-- name: jobs_count_upto
-- Counted exactly up to `cap` rows, no further: a total costs at most that many rows.
SELECT count(*) FROM (SELECT 1 FROM {schema}.jobs WHERE {filter} LIMIT %(cap)s) AS m

-- name: jobs_match_ids
-- One batch of a bulk action: the next ids matching, in id order after `after`.
SELECT id FROM {schema}.jobs
WHERE {filter} AND (%(after)s::bigint IS NULL OR id > %(after)s::bigint)
ORDER BY id LIMIT %(limit)s

-- name: jobs_retry_batch
-- jobs_retry for a batch of ids: the same states, the same changes.
UPDATE {schema}.jobs
SET state = 'available', run_at = {now}, finished_at = NULL,
    max_attempts = greatest(max_attempts, attempt - uncounted + 1), cancel_requested = false
WHERE id = ANY(%(ids)s::bigint[]) AND state IN ('dead', 'cancelled', 'retrying', 'scheduled')
RETURNING id

-- name: jobs_delete_finished
-- As the pruner deletes: finished jobs only (deleting live work is cancelling it).
DELETE FROM {schema}.jobs
WHERE id = ANY(%(ids)s::bigint[]) AND state IN ('succeeded', 'dead', 'cancelled')
RETURNING id

-- name: bulk_actions_add
INSERT INTO {schema}.bulk_actions (at, who, action, filter, matched, done)
VALUES ({now}, %(who)s, %(action)s, %(filter)s, %(matched)s, %(done)s)

-- name: bulk_actions_list
SELECT at, who, action, filter, matched, done FROM {schema}.bulk_actions
ORDER BY id DESC LIMIT %(limit)s

-- name: bulk_actions_prune
DELETE FROM {schema}.bulk_actions
WHERE id <= (SELECT id FROM {schema}.bulk_actions ORDER BY id DESC OFFSET %(keep)s LIMIT 1)
