-- Per queue, per minute: how many jobs finished and how (see the PostgreSQL migration).
CREATE TABLE queue_minutes (
    queue     TEXT    NOT NULL,
    minute    REAL    NOT NULL,  -- Unix seconds, UTC, a whole minute
    succeeded INTEGER NOT NULL DEFAULT 0,
    retried   INTEGER NOT NULL DEFAULT 0,
    dead      INTEGER NOT NULL DEFAULT 0,
    cancelled INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, queue)
);
