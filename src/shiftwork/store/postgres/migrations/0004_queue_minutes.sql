-- Per queue, per minute: how many jobs finished and how. Workers add their counts
-- every few seconds (one upsert per worker per flush), so throughput charts and
-- `shiftwork top` never count the jobs table's history. Kept for a day.
CREATE TABLE {schema}.queue_minutes (
    queue     text        NOT NULL,
    minute    timestamptz NOT NULL,
    succeeded bigint      NOT NULL DEFAULT 0,
    retried   bigint      NOT NULL DEFAULT 0,
    dead      bigint      NOT NULL DEFAULT 0,
    cancelled bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, queue)
);
