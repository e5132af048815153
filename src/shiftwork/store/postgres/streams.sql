-- Named queries for workflow streams (PostgreSQL; workflow/streams.py, jobs/stream_reader.py).

-- name: stream_tail
-- The stream's length and whether it is closed, read under the writer's row lock (the
-- job's holder is the only writer, so the next seq is this count).
SELECT count(*), coalesce(bool_or(closed), false)
FROM {schema}.workflow_streams WHERE job_id = %(job)s AND key = %(key)s

-- name: stream_step_done
SELECT (result #>> '{}')::integer FROM {schema}.workflow_steps
WHERE job_id = %(job)s AND name = %(name)s AND status = 'done'

-- name: stream_append
INSERT INTO {schema}.workflow_streams (job_id, key, seq, value, closed, generation, position,
                                       created_at)
VALUES (%(job)s, %(key)s, %(seq)s, %(value)s::jsonb, %(closed)s,
        coalesce((SELECT generation FROM {schema}.workflow_runs WHERE job_id = %(job)s), 0),
        %(position)s, {now})

-- name: stream_notify
-- Readers wait on the finished-jobs channel (jobs/waiting.py's one listener per process).
SELECT pg_notify(%(done_channel)s, 'stream')

-- name: stream_job_state
SELECT state FROM {schema}.jobs WHERE id = %(job)s

-- name: stream_read
SELECT seq, value, closed FROM {schema}.workflow_streams
WHERE job_id = %(job)s AND key = %(key)s AND seq >= %(offset)s
ORDER BY seq LIMIT %(limit)s

-- name: stream_keys
SELECT key, count(*) FILTER (WHERE NOT closed), bool_or(closed)
FROM {schema}.workflow_streams WHERE job_id = %(job)s GROUP BY key ORDER BY key
