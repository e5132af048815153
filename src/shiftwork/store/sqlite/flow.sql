-- Named queries for flow control (SQLite): rate buckets and group caps. Claims run
-- inside BEGIN IMMEDIATE, which already makes claimers take turns.

-- name: rate_bucket_ensure
INSERT INTO rate_buckets (key, tokens, updated_at) VALUES (:key, :capacity, :now)
ON CONFLICT (key) DO NOTHING

-- name: rate_bucket_lock
SELECT min(:capacity, tokens + max(0, :now - updated_at) * :rate)
FROM rate_buckets WHERE key = :key

-- name: rate_bucket_set
UPDATE rate_buckets SET tokens = :tokens, updated_at = max(updated_at, :now) WHERE key = :key

-- name: rate_bucket_push_back
INSERT INTO rate_buckets (key, tokens, updated_at) VALUES (:key, 0, :now + :seconds)
ON CONFLICT (key) DO UPDATE
SET tokens = 0, updated_at = max(rate_buckets.updated_at, excluded.updated_at)

-- name: rate_buckets_list
SELECT key, tokens, updated_at FROM rate_buckets WHERE tokens < 9e999 ORDER BY key

-- name: rate_buckets_clear
-- Made full, not deleted, as on PostgreSQL (postgres/flow.sql says why): 9e999 is infinity.
UPDATE rate_buckets SET tokens = 9e999, updated_at = :now WHERE key = :key AND tokens < 9e999

-- name: jobs_group_running
SELECT json_extract(meta, '$.group'), count(*) FROM jobs
WHERE state = 'running' AND task = :task AND json_extract(meta, '$.group') IS NOT NULL
GROUP BY 1

-- name: jobs_group_candidates
SELECT id, json_extract(meta, '$.group'), priority, run_at FROM jobs INDEXED BY jobs_claim_idx
WHERE queue = :queue AND task = :task
  AND state IN ('available', 'scheduled', 'retrying') AND run_at <= :now
  AND NOT EXISTS (SELECT 1 FROM queue_settings s WHERE s.queue = :queue AND s.paused)
  AND (:after_id IS NULL OR (-priority, run_at, id) > (-:after_priority, :after_run_at, :after_id))
ORDER BY priority DESC, run_at, id
LIMIT :limit

-- name: jobs_claim_ids
UPDATE jobs
SET state = 'running', attempt = attempt + 1, worker_id = :worker, attempted_at = :now,
    lease_expires_at = :now + :lease
WHERE id IN (SELECT value FROM json_each(:ids))
  AND state IN ('available', 'scheduled', 'retrying')
RETURNING id, task, queue, args, attempt, max_attempts, timeout, checkpoint, meta, priority, run_at,
          uncounted

-- name: fair_cursor_ensure
INSERT INTO fair_cursors (queue, last_group) VALUES (:queue, '') ON CONFLICT (queue) DO NOTHING

-- name: fair_cursor_lock
SELECT last_group, served FROM fair_cursors WHERE queue = :queue

-- name: fair_cursor_set
UPDATE fair_cursors SET last_group = :group, served = :served WHERE queue = :queue

-- name: fair_groups
-- The next groups with waiting jobs after a group key, in key order: a loose index scan of
-- jobs_group_claim_idx, one index probe per group, whatever the backlog of each.
WITH RECURSIVE g(grp, n) AS (
    SELECT (SELECT json_extract(meta, '$.group') FROM jobs INDEXED BY jobs_group_claim_idx
            WHERE queue = :queue AND state IN ('available', 'scheduled', 'retrying')
              AND json_extract(meta, '$.group') IS NOT NULL
              AND json_extract(meta, '$.group') > :after
            ORDER BY json_extract(meta, '$.group') LIMIT 1), 1
    UNION ALL
    SELECT (SELECT json_extract(j.meta, '$.group') FROM jobs j INDEXED BY jobs_group_claim_idx
            WHERE j.queue = :queue AND j.state IN ('available', 'scheduled', 'retrying')
              AND json_extract(j.meta, '$.group') IS NOT NULL
              AND json_extract(j.meta, '$.group') > g.grp
            ORDER BY json_extract(j.meta, '$.group') LIMIT 1), g.n + 1
    FROM g WHERE g.grp IS NOT NULL AND g.n < :n
)
SELECT grp FROM g WHERE grp IS NOT NULL

-- name: fair_heads
-- The first due jobs of one group, in claim order within the group (priority wins there).
SELECT id, json_extract(meta, '$.group'), task FROM jobs INDEXED BY jobs_group_claim_idx
WHERE queue = :queue AND state IN ('available', 'scheduled', 'retrying')
  AND json_extract(meta, '$.group') IS NOT NULL AND json_extract(meta, '$.group') = :group
  AND run_at <= :now
  AND NOT EXISTS (SELECT 1 FROM queue_settings s WHERE s.queue = :queue AND s.paused)
ORDER BY priority DESC, run_at, id
LIMIT :take OFFSET :skip

-- name: fair_ungrouped
-- Jobs without a group, if among the first :peek waiting jobs (bounded: see the Postgres file).
SELECT id, NULL, task FROM (
    SELECT id, task, meta, priority, run_at FROM jobs INDEXED BY jobs_claim_idx
    WHERE queue = :queue AND state IN ('available', 'scheduled', 'retrying')
      AND run_at <= :now
      AND NOT EXISTS (SELECT 1 FROM queue_settings s WHERE s.queue = :queue AND s.paused)
    ORDER BY priority DESC, run_at, id
    LIMIT :peek
)
WHERE json_extract(meta, '$.group') IS NULL
ORDER BY priority DESC, run_at, id
LIMIT :take OFFSET :skip

-- name: rate_buckets_prune
-- See the Postgres file: idle buckets under a prefix are full again, the same as no row.
DELETE FROM rate_buckets
WHERE substr(key, 1, length(:prefix)) = :prefix AND updated_at < :now - :idle
