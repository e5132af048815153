-- Named queries for workflow streams (SQLite; workflow/streams.py, jobs/stream_reader.py).

-- name: stream_tail
-- The stream's length and whether it is closed, read in the writer's transaction (the
-- job's holder is the only writer, so the next seq is this count).
SELECT count(*), coalesce(max(closed), 0)
FROM workflow_streams WHERE job_id = :job AND key = :key

-- name: stream_step_done
SELECT CAST(result AS INTEGER) FROM workflow_steps
WHERE job_id = :job AND name = :name AND status = 'done'

-- name: stream_append
INSERT INTO workflow_streams (job_id, key, seq, value, closed, generation, position,
                              created_at)
VALUES (:job, :key, :seq, :value, :closed,
        coalesce((SELECT generation FROM workflow_runs WHERE job_id = :job), 0),
        :position, :now)

-- name: stream_job_state
SELECT state FROM jobs WHERE id = :job

-- name: stream_read
SELECT seq, value, closed FROM workflow_streams
WHERE job_id = :job AND key = :key AND seq >= :offset
ORDER BY seq LIMIT :limit

-- name: stream_keys
SELECT key, sum(closed = 0), max(closed)
FROM workflow_streams WHERE job_id = :job GROUP BY key ORDER BY key
