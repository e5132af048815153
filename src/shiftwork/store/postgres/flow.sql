-- Named queries for flow control (PostgreSQL): rate buckets and group caps.

-- name: rate_bucket_lock
-- The bucket's tokens refilled up to now (never past its capacity), under a row lock
-- held until the claim commits: claimers of one limit take turns, so the count is exact.
-- A missing bucket is made full; the no-op update on conflict is what takes the lock.
INSERT INTO {schema}.rate_buckets AS b (key, tokens, updated_at)
VALUES (%(key)s, %(capacity)s, {now})
ON CONFLICT (key) DO UPDATE SET tokens = b.tokens
RETURNING least(%(capacity)s, b.tokens + greatest(0, extract(epoch FROM {now} - b.updated_at))
                                        * %(rate)s)

-- name: rate_bucket_set
UPDATE {schema}.rate_buckets SET tokens = %(tokens)s, updated_at = greatest(updated_at, {now})
WHERE key = %(key)s

-- name: rate_bucket_push_back
INSERT INTO {schema}.rate_buckets (key, tokens, updated_at)
VALUES (%(key)s, 0, {now} + make_interval(secs => %(seconds)s))
ON CONFLICT (key) DO UPDATE
SET tokens = 0, updated_at = greatest({schema}.rate_buckets.updated_at, excluded.updated_at)

-- name: rate_buckets_list
-- A hold stored before holds were bounded may lie past what Python's datetime can read.
SELECT key, tokens, least(updated_at, '9999-01-01 00:00:00+00'::timestamptz)
FROM {schema}.rate_buckets WHERE tokens <> 'Infinity' ORDER BY key

-- name: rate_buckets_clear
-- Made full, not deleted: a store that made a bucket once does not make it again before its
-- one-statement claims (store.py, _ensure_bucket), so a deleted bucket would hold that
-- limit's jobs back in every such worker until it restarts. Infinite tokens read as full
-- (every claim takes least(capacity, ...)); rate_buckets_list shows such a row as none.
UPDATE {schema}.rate_buckets SET tokens = 'Infinity', updated_at = {now}
WHERE key = %(key)s AND tokens <> 'Infinity'

-- name: jobs_group_running
SELECT meta->>'group', count(*) FROM {schema}.jobs
WHERE state = 'running' AND task = %(task)s AND meta ? 'group'
GROUP BY 1

-- name: jobs_group_candidates
-- A page of a task's due jobs in claim order, after a keyset position, with their groups.
SELECT id, meta->>'group', priority, run_at FROM {schema}.jobs
WHERE queue = %(queue)s AND task = %(task)s
  AND state IN ('available', 'scheduled', 'retrying') AND run_at <= {now}
  AND NOT EXISTS (SELECT 1 FROM {schema}.queue_settings s
                  WHERE s.queue = %(queue)s AND s.paused)
  AND (%(after_id)s::bigint IS NULL
       OR (-priority, run_at, id) > (-%(after_priority)s::int, %(after_run_at)s::timestamptz,
                                     %(after_id)s::bigint))
ORDER BY priority DESC, run_at, id
LIMIT %(limit)s

-- name: jobs_claim_ids
UPDATE {schema}.jobs j
SET state = 'running', attempt = j.attempt + 1, worker_id = %(worker)s,
    attempted_at = {now}, lease_expires_at = {now} + make_interval(secs => %(lease)s)
WHERE j.id = ANY(%(ids)s::bigint[]) AND j.state IN ('available', 'scheduled', 'retrying')
RETURNING j.id, j.task, j.queue, j.args::text, j.attempt, j.max_attempts, j.timeout,
          j.checkpoint::text, j.meta::text, j.priority, j.run_at, j.uncounted

-- name: fair_cursor_ensure
INSERT INTO {schema}.fair_cursors (queue, last_group) VALUES (%(queue)s, '')
ON CONFLICT (queue) DO NOTHING

-- name: fair_cursor_lock
-- Held until the claim commits: claimers of one fair queue take turns around the round.
SELECT last_group, served FROM {schema}.fair_cursors WHERE queue = %(queue)s FOR UPDATE

-- name: fair_cursor_set
UPDATE {schema}.fair_cursors SET last_group = %(group)s, served = %(served)s WHERE queue = %(queue)s

-- name: fair_groups
-- The next groups with waiting jobs after a group key, in key order: a loose index scan of
-- jobs_group_claim_idx, one index probe per group, whatever the backlog of each.
WITH RECURSIVE g(grp, n) AS (
    (SELECT meta->>'group', 1 FROM {schema}.jobs
     WHERE queue = %(queue)s AND state IN ('available', 'scheduled', 'retrying')
       AND meta ? 'group' AND meta->>'group' > %(after)s
     ORDER BY meta->>'group' LIMIT 1)
    UNION ALL
    SELECT (SELECT j.meta->>'group' FROM {schema}.jobs j
            WHERE j.queue = %(queue)s AND j.state IN ('available', 'scheduled', 'retrying')
              AND j.meta ? 'group' AND j.meta->>'group' > g.grp
            ORDER BY j.meta->>'group' LIMIT 1), g.n + 1
    FROM g WHERE g.grp IS NOT NULL AND g.n < %(n)s
)
SELECT grp FROM g WHERE grp IS NOT NULL

-- name: fair_heads
-- The first due jobs of each group, in claim order within the group (priority wins there),
-- skipping the ones this claim already looked at.
SELECT h.id, g.grp, h.task FROM
    unnest(%(groups)s::text[], %(take)s::int[], %(skip)s::int[]) WITH ORDINALITY
        AS g(grp, take, skip, ord)
CROSS JOIN LATERAL (
    SELECT j.id, j.task, j.priority, j.run_at FROM {schema}.jobs j
    WHERE j.queue = %(queue)s AND j.state IN ('available', 'scheduled', 'retrying')
      AND j.meta ? 'group' AND j.meta->>'group' = g.grp AND j.run_at <= {now}
      AND NOT EXISTS (SELECT 1 FROM {schema}.queue_settings s
                      WHERE s.queue = %(queue)s AND s.paused)
    ORDER BY j.priority DESC, j.run_at, j.id
    LIMIT g.take OFFSET g.skip
) h
ORDER BY g.ord, h.priority DESC, h.run_at, h.id

-- name: fair_ungrouped
-- Jobs without a group take one turn per round, as one group of their own, if they are
-- among the first %(peek)s waiting jobs: bounded, so a grouped flood is never read through.
SELECT id, NULL, task FROM (
    SELECT id, task, meta, priority, run_at FROM {schema}.jobs
    WHERE queue = %(queue)s AND state IN ('available', 'scheduled', 'retrying')
      AND run_at <= {now}
      AND NOT EXISTS (SELECT 1 FROM {schema}.queue_settings s
                      WHERE s.queue = %(queue)s AND s.paused)
    ORDER BY priority DESC, run_at, id
    LIMIT %(peek)s
) w
WHERE NOT meta ? 'group'
ORDER BY priority DESC, run_at, id
LIMIT %(take)s OFFSET %(skip)s

-- name: rate_buckets_prune
-- Buckets under a prefix (one task's per-group limits) idle long enough to be full again:
-- a full bucket and no row are the same to a claim. A pushed-back bucket (updated_at in the
-- future) is kept.
DELETE FROM {schema}.rate_buckets
WHERE starts_with(key, %(prefix)s) AND updated_at < {now} - make_interval(secs => %(idle)s)

-- name: rate_bucket_ensure
INSERT INTO {schema}.rate_buckets (key, tokens, updated_at)
VALUES (%(key)s, %(capacity)s, {now})
ON CONFLICT (key) DO NOTHING

-- The claims of the kinds that run in one statement (store/flow_claim.py, ClaimKind), each
-- a call of its function in migrations/functions.sql, where the statement is explained.
-- The function runs it under its generic plan, planned once per connection.

-- name: jobs_claim_queue_rate
-- A queue whose only limit is its own rate; its bucket made beforehand.
SELECT * FROM {schema}.claim_jobs_queue_rate(%(queue)s, %(limit)s, %(worker)s,
    %(lease)s, %(key)s, %(capacity)s::float8, %(rate)s::float8, %(now)s)

-- name: jobs_claim_task_rates
-- A queue whose only limits are task rate limits (tasks sorted); their buckets made
-- beforehand.
SELECT * FROM {schema}.claim_jobs_task_rates(%(queue)s, %(limit)s, %(worker)s, %(lease)s,
    %(tasks)s::text[], %(capacities)s::float8[], %(rates)s::float8[], %(now)s)

-- name: jobs_claim_fair
-- A fair queue with no other limit (no weights either).
SELECT * FROM {schema}.claim_jobs_fair(%(queue)s, %(limit)s, %(worker)s, %(lease)s, %(now)s)
