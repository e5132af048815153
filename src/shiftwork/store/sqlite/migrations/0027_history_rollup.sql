-- History charts (issue 29): see the PostgreSQL migration of the same number.
CREATE TABLE history_rollup (
    queue       TEXT    NOT NULL,
    task        TEXT    NOT NULL,
    bucket      REAL    NOT NULL,  -- Unix seconds, UTC, a multiple of 300
    succeeded   INTEGER NOT NULL DEFAULT 0,
    retried     INTEGER NOT NULL DEFAULT 0,
    dead        INTEGER NOT NULL DEFAULT 0,
    cancelled   INTEGER NOT NULL DEFAULT 0,
    runs        INTEGER NOT NULL DEFAULT 0,
    p50         REAL,
    p95         REAL,
    oldest_wait REAL,
    PRIMARY KEY (queue, task, bucket)
);
ALTER TABLE task_minutes ADD COLUMN retried INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_minutes ADD COLUMN dead INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_minutes ADD COLUMN cancelled INTEGER NOT NULL DEFAULT 0;
