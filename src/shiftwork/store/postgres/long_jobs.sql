-- Long jobs: checkpoints, progress, explicit heartbeats, paused queues, effect keys.

-- name: jobs_touch
-- A running attempt shows it still holds its job: saves a checkpoint and/or progress and
-- extends its lease, fenced by attempt. No row back: the attempt is stale (lease lost).
-- Returns whether someone asked the job to stop, and whether its queue is paused.
UPDATE {schema}.jobs j
SET checkpoint = CASE WHEN %(set_checkpoint)s THEN %(checkpoint)s::jsonb ELSE j.checkpoint END,
    progress = coalesce(%(progress)s::jsonb, j.progress),
    lease_expires_at = greatest(j.lease_expires_at, {now} + make_interval(secs => %(lease)s))
WHERE j.id = %(id)s AND j.attempt = %(attempt)s AND j.state = 'running'
RETURNING j.cancel_requested,
          coalesce((SELECT s.paused FROM {schema}.queue_settings s WHERE s.queue = j.queue), false)

-- name: jobs_yield
-- At a checkpoint on a paused queue: back to waiting, without spending an attempt.
UPDATE {schema}.jobs
SET state = 'available', lease_expires_at = NULL, uncounted = uncounted + 1,
    run_at = {now},
    errors = errors || jsonb_build_array(jsonb_build_object(
        'attempt', attempt, 'kind', 'paused', 'type', 'QueuePaused',
        'message', 'queue ' || queue || ' was paused; the job yielded at its checkpoint',
        'at', {now}))
WHERE id = %(id)s AND attempt = %(attempt)s AND state = 'running'
RETURNING id

-- name: queues_set_paused
INSERT INTO {schema}.queue_settings (queue, paused, updated_at)
VALUES (%(queue)s, %(paused)s, {now})
ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at

-- name: queues_paused
SELECT queue FROM {schema}.queue_settings WHERE paused ORDER BY queue

-- name: effect_keys_insert
INSERT INTO {schema}.effect_keys (key, job_id, attempt, result, created_at, expires_at)
VALUES (%(key)s, %(job_id)s, %(attempt)s, %(result)s::jsonb, {now},
        {now} + make_interval(secs => %(keep)s))
ON CONFLICT (key) DO NOTHING
RETURNING key

-- name: effect_keys_set_result
UPDATE {schema}.effect_keys SET result = %(result)s::jsonb WHERE key = %(key)s

-- name: effect_keys_get
SELECT result, job_id, attempt, created_at, expires_at
FROM {schema}.effect_keys WHERE key = %(key)s

-- name: effect_keys_prune
DELETE FROM {schema}.effect_keys WHERE key IN (
    SELECT key FROM {schema}.effect_keys WHERE expires_at < {now} LIMIT %(limit)s
)
