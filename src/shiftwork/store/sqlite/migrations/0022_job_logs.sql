-- What a job logged while it ran (issue 29): one row per record, per attempt, bounded per
-- attempt by Settings.job_log_lines / job_log_bytes; deleted with its job (pruned,
-- discarded). As in the Postgres migration of the same number.
CREATE TABLE job_logs (
    job_id  INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt INTEGER NOT NULL,
    seq     INTEGER NOT NULL,  -- the record's place in its attempt, from 1
    at      REAL    NOT NULL,
    level   TEXT    NOT NULL,
    logger  TEXT    NOT NULL,
    message TEXT    NOT NULL,
    PRIMARY KEY (job_id, attempt, seq)
);
