-- What a job logged while it ran (issue 29): one row per record, per attempt, bounded per
-- attempt by Settings.job_log_lines / job_log_bytes; deleted with its job (pruned,
-- discarded): the primary key leads with job_id, so the cascade finds a job's rows by it.
CREATE TABLE {schema}.job_logs (
    job_id  bigint      NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    attempt integer     NOT NULL,
    seq     integer     NOT NULL,  -- the record's place in its attempt, from 1
    at      timestamptz NOT NULL,
    level   text        NOT NULL,
    logger  text        NOT NULL,
    message text        NOT NULL,
    PRIMARY KEY (job_id, attempt, seq)
);
