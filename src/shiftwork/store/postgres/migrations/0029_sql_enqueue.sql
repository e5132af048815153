-- Enqueue from SQL (docs/integrations.md, "Enqueue from SQL"): the function enqueue
-- (functions.sql) lets a trigger, or any client that can run SQL, insert a job as the
-- Python enqueue does. A SQL producer does not know a task's Python options, so the
-- Apps that run `migrate` and the workers that start write their tasks' options here
-- (store/task_defaults.py); enqueue reads a task's row for what the call leaves out,
-- and refuses a task without one unless the call names its queue.
CREATE TABLE {schema}.task_defaults (
    name         text PRIMARY KEY,
    queue        text        NOT NULL,
    priority     smallint    NOT NULL,
    max_attempts integer     NOT NULL,
    timeout      double precision,
    updated_at   timestamptz NOT NULL
);
-- apply: functions.sql
