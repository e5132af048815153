-- Workflow streams, forks and continue-as-new (issue 32). A stream is the values a
-- workflow appends under a key (its closing is the last row), each written in the same
-- transaction as the step record that makes a replay skip it. A run's generation counts
-- its continue-as-new resets: the steps are the current generation's, the stream rows
-- outlive them.
CREATE TABLE {schema}.workflow_streams (
    job_id     bigint      NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    key        text        NOT NULL,
    seq        integer     NOT NULL,  -- 0, 1, 2... per key: a reader's offset
    value      jsonb,
    closed     boolean     NOT NULL DEFAULT false,
    generation integer     NOT NULL DEFAULT 0,
    position   integer     NOT NULL,  -- the writing step's place (a fork copies by it)
    created_at timestamptz NOT NULL,
    PRIMARY KEY (job_id, key, seq)
);

ALTER TABLE {schema}.workflow_runs ADD COLUMN generation integer NOT NULL DEFAULT 0;
