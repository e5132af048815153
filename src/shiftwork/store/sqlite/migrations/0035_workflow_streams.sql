-- Workflow streams, forks and continue-as-new (issue 32). A stream is the values a
-- workflow appends under a key (its closing is the last row), each written in the same
-- transaction as the step record that makes a replay skip it. A run's generation counts
-- its continue-as-new resets: the steps are the current generation's, the stream rows
-- outlive them.
CREATE TABLE workflow_streams (
    job_id     INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    key        TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    value      TEXT,
    closed     INTEGER NOT NULL DEFAULT 0,
    generation INTEGER NOT NULL DEFAULT 0,
    position   INTEGER NOT NULL,
    created_at REAL    NOT NULL,
    PRIMARY KEY (job_id, key, seq)
);

ALTER TABLE workflow_runs ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
