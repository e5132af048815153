-- The options of the tasks an App declares, for the SQL enqueue function (functions.sql:
-- enqueue; migration 0029). Written by migrate and by each worker as it starts
-- (store/task_defaults.py): the last to write a task's row wins, as the newest release
-- is the one starting.

-- name: task_defaults_upsert
INSERT INTO {schema}.task_defaults AS d (name, queue, priority, max_attempts, timeout,
                                         updated_at)
SELECT * FROM unnest(%(names)s::text[], %(queues)s::text[], %(priorities)s::smallint[],
                     %(max_attempts)s::int[], %(timeouts)s::float8[]),
       LATERAL (SELECT now()) AS t
ON CONFLICT (name) DO UPDATE
    SET queue = excluded.queue, priority = excluded.priority,
        max_attempts = excluded.max_attempts, timeout = excluded.timeout,
        updated_at = excluded.updated_at
