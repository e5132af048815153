-- Named queries for flow control (PostgreSQL): rate buckets and group caps.

-- name: rate_bucket_ensure
INSERT INTO {schema}.rate_buckets (key, tokens, updated_at)
VALUES (%(key)s, %(capacity)s, {now})
ON CONFLICT (key) DO NOTHING

-- name: rate_bucket_lock
-- The bucket's tokens refilled up to now (never past its capacity), under a row lock
-- held until the claim commits: claimers of one limit take turns, so the count is exact.
SELECT least(%(capacity)s, tokens + greatest(0, extract(epoch FROM {now} - updated_at))
                                    * %(rate)s)
FROM {schema}.rate_buckets WHERE key = %(key)s
FOR UPDATE

-- name: rate_bucket_set
UPDATE {schema}.rate_buckets SET tokens = %(tokens)s, updated_at = greatest(updated_at, {now})
WHERE key = %(key)s

-- name: rate_bucket_push_back
INSERT INTO {schema}.rate_buckets (key, tokens, updated_at)
VALUES (%(key)s, 0, {now} + make_interval(secs => %(seconds)s))
ON CONFLICT (key) DO UPDATE
SET tokens = 0, updated_at = greatest({schema}.rate_buckets.updated_at, excluded.updated_at)

-- name: rate_buckets_list
SELECT key, tokens, updated_at FROM {schema}.rate_buckets ORDER BY key

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
