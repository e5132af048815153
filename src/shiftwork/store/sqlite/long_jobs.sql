-- Long jobs: checkpoints, progress, explicit heartbeats, paused queues, effect keys.

-- name: jobs_touch
-- A running attempt shows it still holds its job: saves a checkpoint and/or progress and
-- extends its lease, fenced by attempt. No row back: the attempt is stale (lease lost).
-- Returns whether someone asked the job to stop, and whether its queue is paused.
UPDATE jobs
SET checkpoint = CASE WHEN :set_checkpoint THEN :checkpoint ELSE checkpoint END,
    progress = coalesce(:progress, progress),
    lease_expires_at = max(lease_expires_at, :now + :lease)
WHERE id = :id AND attempt = :attempt AND state = 'running'
RETURNING cancel_requested,
          coalesce((SELECT s.paused FROM queue_settings s WHERE s.queue = jobs.queue), 0)

-- name: jobs_yield
-- At a checkpoint on a paused queue: back to waiting, without spending an attempt.
UPDATE jobs
SET state = 'available', lease_expires_at = NULL, uncounted = uncounted + 1, run_at = :now,
    errors = json_insert(errors, '$[#]', json_object(
        'attempt', attempt, 'kind', 'paused', 'type', 'QueuePaused',
        'message', 'queue ' || queue || ' was paused; the job yielded at its checkpoint',
        'at', :now_iso))
WHERE id = :id AND attempt = :attempt AND state = 'running'
RETURNING id

-- name: queues_set_paused
INSERT INTO queue_settings (queue, paused, updated_at) VALUES (:queue, :paused, :now)
ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at

-- name: queues_paused
SELECT queue FROM queue_settings WHERE paused ORDER BY queue

-- name: effect_keys_insert
INSERT INTO effect_keys (key, job_id, attempt, result, created_at, expires_at)
VALUES (:key, :job_id, :attempt, :result, :now, :now + :keep)
ON CONFLICT (key) DO NOTHING
RETURNING key

-- name: effect_keys_set_result
UPDATE effect_keys SET result = :result WHERE key = :key

-- name: effect_keys_get
SELECT result, job_id, attempt, created_at, expires_at FROM effect_keys WHERE key = :key

-- name: effect_keys_prune
DELETE FROM effect_keys WHERE key IN (
    SELECT key FROM effect_keys WHERE expires_at < :now LIMIT :limit
)
